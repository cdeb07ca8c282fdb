//! The dedicated thread that owns the PostgreSQL connection.

use std::sync::mpsc;
use std::thread::JoinHandle;

use postgres::{Client, Config, NoTls};
use workflow_core::ledger::LedgerError;

use crate::OpenError;

/// Work for the connection's thread: it is given the connection, or why
/// there is none (it could not reconnect).
type Job = Box<dyn FnOnce(Result<&mut Client, String>) + Send>;

/// One connection, owned by its own thread; calls wait for their answer.
pub(crate) struct Connection {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Connection {
    /// Parses `url`, connects from a new thread and waits until connected.
    pub(crate) fn open(url: &str) -> Result<Self, OpenError> {
        let config: Config = url
            .parse()
            .map_err(|e: postgres::Error| OpenError::Config(describe(&e)))?;
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("workflow-postgres".into())
            .spawn(move || {
                let mut client = match config.connect(NoTls) {
                    Ok(client) => {
                        let _ = ready_tx.send(Ok(()));
                        client
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(describe(&e)));
                        return;
                    }
                };
                for job in queue {
                    // A connection the server closed (restart, failover) is
                    // opened again before the next call.
                    if client.is_closed() {
                        match config.connect(NoTls) {
                            Ok(fresh) => client = fresh,
                            Err(e) => {
                                job(Err(format!("reconnecting: {}", describe(&e))));
                                continue;
                            }
                        }
                    }
                    job(Ok(&mut client));
                }
            })
            .map_err(|e| OpenError::Connect(format!("cannot start the connection thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Connection {
                jobs: Some(jobs),
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(OpenError::Connect(e)),
            Err(_) => Err(OpenError::Connect(
                "the connection thread stopped before connecting".into(),
            )),
        }
    }

    /// Runs `f` with the connection on its thread and returns its answer.
    pub(crate) fn call<T, E>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<Gone> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |client| {
            let answer = match client {
                Ok(client) => f(client),
                Err(e) => Err(E::from(Gone(e))),
            };
            let _ = tx.send(answer);
        });
        let jobs = self
            .jobs
            .as_ref()
            .ok_or_else(|| E::from(Gone("the ledger is closed".into())))?;
        jobs.send(job)
            .map_err(|_| E::from(Gone("the connection thread has stopped".into())))?;
        rx.recv()
            .map_err(|_| E::from(Gone("the connection thread stopped during a call".into())))?
    }
}

/// The connection is not there to answer.
#[derive(Debug)]
pub(crate) struct Gone(pub(crate) String);

impl From<Gone> for LedgerError {
    fn from(e: Gone) -> Self {
        LedgerError::Storage(format!("PostgreSQL: {}", e.0))
    }
}

impl From<Gone> for OpenError {
    fn from(e: Gone) -> Self {
        OpenError::Connect(e.0)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop once queued calls are
        // answered; the connection is closed on its own thread.
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A client error with its causes: the server's own message (severity,
/// code, text) is the error's source, not its `Display` ("db error").
pub(crate) fn describe(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
