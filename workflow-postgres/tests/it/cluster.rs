//! A throwaway PostgreSQL cluster per test: `initdb` into a temporary
//! directory, `pg_ctl start` on a free port of 127.0.0.1 with trust
//! authentication, `pg_ctl stop -m immediate` and the directory removed on
//! drop (also when the test panics).
//!
//! The binaries are found in `WORKFLOW_PG_BINDIR` when it is set (only
//! there), else with `pg_config --bindir`, then under
//! `/usr/lib/postgresql/*/bin` (15 first). Run as root (CI, sessions),
//! `initdb` and `pg_ctl` are run as the `postgres` system user through
//! `runuser`, since PostgreSQL refuses to run as root. Without binaries a
//! test prints why it is skipped and passes, unless
//! `WORKFLOW_REQUIRE_POSTGRES=1` (set by `.ci/run`) makes that a failure.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A running throwaway cluster.
pub struct Cluster {
    bindir: PathBuf,
    /// The temporary directory: `data/` (the cluster), the socket and the log.
    dir: PathBuf,
    port: u16,
    /// Run the binaries as this user (`runuser -u`), when running as root.
    user: Option<String>,
}

/// Starts a cluster for the calling test, or returns from it after saying
/// why there is none.
macro_rules! cluster_or_skip {
    () => {
        match $crate::cluster::Cluster::start() {
            Ok(cluster) => cluster,
            Err(why) => {
                $crate::cluster::skip(&why);
                return;
            }
        }
    };
}
pub(crate) use cluster_or_skip;

/// Reports a test skipped for want of PostgreSQL, or fails it when CI
/// requires PostgreSQL.
pub fn skip(why: &str) {
    if std::env::var_os("WORKFLOW_REQUIRE_POSTGRES").is_some_and(|v| v == "1") {
        panic!("PostgreSQL is required (WORKFLOW_REQUIRE_POSTGRES=1) but: {why}");
    }
    eprintln!("SKIPPED: no throwaway PostgreSQL cluster: {why}");
}

fn bindir() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    // An explicit folder is the only one tried (another version, or none).
    if let Some(dir) = std::env::var_os("WORKFLOW_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        return if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
            Ok(dir)
        } else {
            Err(format!(
                "no initdb and pg_ctl in WORKFLOW_PG_BINDIR={}",
                dir.display()
            ))
        };
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    candidates.push(PathBuf::from("/usr/lib/postgresql/15/bin"));
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path().join("bin")))
            .collect();
        versions.sort();
        candidates.extend(versions.into_iter().rev());
    }
    candidates
        .into_iter()
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .ok_or_else(|| {
            "no initdb and pg_ctl (pg_config --bindir, /usr/lib/postgresql/*/bin); \
             install the `postgresql` Debian package"
                .to_string()
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn failed(what: &str, out: &Output) -> String {
    format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Cluster {
    /// Creates and starts a cluster, or says why it cannot.
    pub fn start() -> Result<Cluster, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let bindir = bindir()?;
        let user = is_root().then(|| "postgres".to_string());
        let dir = std::env::temp_dir().join(format!(
            "workflow-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        if let Some(user) = &user {
            let out = Command::new("chown")
                .arg(user)
                .arg(&dir)
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !out.status.success() {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(failed(&format!("chown {user}"), &out));
            }
        }
        // From here on, dropping the cluster cleans up whatever was made.
        let mut cluster = Cluster {
            bindir,
            dir,
            port: 0,
            user,
        };
        let data = cluster.dir.join("data");
        let out = cluster.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "postgres".as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "--no-sync".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
            ],
        )?;
        if !out.status.success() {
            return Err(failed("initdb", &out));
        }
        // A port found free can be taken before the server binds it: try a
        // few.
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port()?;
            let options = format!(
                "-p {} -h 127.0.0.1 -k {} -F -c max_connections=50",
                cluster.port,
                cluster.dir.display()
            );
            let log = cluster.dir.join("log");
            let out = cluster.run(
                "pg_ctl",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-l".as_ref(),
                    log.as_os_str(),
                    "-w".as_ref(),
                    "-t".as_ref(),
                    "60".as_ref(),
                    "-o".as_ref(),
                    options.as_ref(),
                    "start".as_ref(),
                ],
            )?;
            if out.status.success() {
                return Ok(cluster);
            }
            last = format!(
                "{}\nlog: {}",
                failed("pg_ctl start", &out),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        Err(last)
    }

    /// Runs one of the cluster's binaries, as the `postgres` user when
    /// running as root.
    fn run(&self, binary: &str, args: &[&std::ffi::OsStr]) -> Result<Output, String> {
        let program = self.bindir.join(binary);
        let mut command = match &self.user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        command
            .args(args)
            .current_dir(&self.dir)
            .output()
            .map_err(|e| format!("running {}: {e}", program.display()))
    }

    /// The URL of database `name` (the `postgres` database always exists).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub fn database(&self, name: &str) -> String {
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        self.url(name)
    }

    /// Runs `sql` in database `name` on a client of its own thread (the
    /// synchronous client must not run inside the test's tokio runtime).
    pub fn sql(&self, name: &str, sql: &str) -> Vec<postgres::SimpleQueryMessage> {
        let url = self.url(name);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut client =
                    postgres::Client::connect(&url, postgres::NoTls).expect("connects");
                client.simple_query(sql).expect("the statement runs")
            })
            .join()
            .expect("the statement's thread finishes")
        })
    }

    /// The rows `sql` returns in database `name`, each as text columns.
    pub fn rows(&self, name: &str, sql: &str) -> Vec<Vec<Option<String>>> {
        self.sql(name, sql)
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    }

    /// The directory of the cluster.
    #[allow(dead_code)]
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        if data.join("postmaster.pid").exists() {
            let _ = self.run(
                "pg_ctl",
                &[
                    "-D".as_ref(),
                    data.as_os_str(),
                    "-m".as_ref(),
                    "immediate".as_ref(),
                    "-w".as_ref(),
                    "stop".as_ref(),
                ],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
