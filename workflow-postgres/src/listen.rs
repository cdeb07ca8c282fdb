//! A worker's `LISTEN` connection: a thread of its own waits for
//! notifications on the queue's channel and wakes the worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Config, NoTls};
use tokio::sync::Notify;

use crate::OpenError;
use crate::connection::describe;
use crate::queue::CHANNEL;

/// Wakes its owner on every notification of [`CHANNEL`]; stops its thread
/// when dropped.
pub(crate) struct Listener {
    wake: Arc<Notify>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// How often the thread looks at its stop flag between notifications.
const TICK: Duration = Duration::from_millis(200);

impl Listener {
    /// Connects to `url` and listens (waits until it does, so that nothing
    /// announced after this returns is missed).
    pub(crate) fn start(url: &str) -> Result<Self, OpenError> {
        let config: Config = url
            .parse()
            .map_err(|e: postgres::Error| OpenError::Config(describe(&e)))?;
        let wake = Arc::new(Notify::new());
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let (wake, stop) = (wake.clone(), stop.clone());
            std::thread::Builder::new()
                .name("workflow-postgres-listen".into())
                .spawn(move || listen(config, &wake, &stop, ready_tx))
                .map_err(|e| OpenError::Connect(format!("cannot start the listen thread: {e}")))?
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Listener {
                wake,
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(OpenError::Connect(e)),
            Err(_) => Err(OpenError::Connect(
                "the listen thread stopped before listening".into(),
            )),
        }
    }

    /// Completes at the next notification (or at once if one came since
    /// the last call).
    pub(crate) async fn notified(&self) {
        self.wake.notified().await;
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn listen(
    config: Config,
    wake: &Notify,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let mut ready = Some(ready);
    while !stop.load(Ordering::Relaxed) {
        let connected = config.connect(NoTls).and_then(|mut client| {
            client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
            Ok(client)
        });
        let mut client = match connected {
            Ok(client) => client,
            Err(e) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(describe(&e)));
                    return;
                }
                // Lost and not back yet: the worker still polls meanwhile.
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
        // Once reconnected, something may have been announced meanwhile.
        wake.notify_one();
        while !stop.load(Ordering::Relaxed) {
            let next = client.notifications().timeout_iter(TICK).next();
            match next {
                Ok(Some(_)) => wake.notify_one(),
                Ok(None) => {}
                Err(_) => break,
            }
            if client.is_closed() {
                break;
            }
        }
    }
}
