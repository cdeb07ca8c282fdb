//! The ledger campaign (`cargo run --release -p examples --example
//! ledger_campaign -- --kills 200 --tampers 1000`; a small one runs as a
//! test, `tests/it/campaign.rs`):
//!
//! 1. **Kill loop.** A child process runs the three-agent [`relay`]
//!    workflow (one write per turn) and the parallel [`fanout_relay`] (a
//!    lead, three branches at once, a join; one write per turn), one after
//!    the other, against an SQLite ledger, and is killed (SIGKILL) at a
//!    random moment, `kills` times: between turns, inside a turn, inside a
//!    fan-out (some branches ended, others cut).
//! 2. **Two resumers per run.** Every run found is resumed by two resumers
//!    at once, each with its own connection to the file (as two processes
//!    would be): one claims the run, the other is told who holds it (or
//!    finds the run ended). Then every run must verify, hold exactly the
//!    records of a run of its workflow never killed (nothing lost, nothing
//!    duplicated, the fan-out's records in their order), and
//!    every write must have had its effect exactly once, with no call made
//!    twice by the resumers.
//! 3. **Tampering.** On copies of the ledger: single-byte edits of stored
//!    records, record deletions, sequence-number changes, each counted as
//!    detected when `verify` (or reading the run) reports it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use workflow_core::RunError;
use workflow_core::ledger::{Durability, Ledger, LedgerError, LedgerRecord, SqliteLedger};

use crate::fanout_relay::fanout_relay;
use crate::relay::{EffectLog, relay};

/// The two workflows the child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// [`relay`]: three turns one after the other.
    Relay,
    /// [`fanout_relay`]: a lead, three branches at once (the middle one
    /// fanning out again to two, joined inside it), a join.
    Fanout,
}

impl Kind {
    /// The workflow a run's records belong to (its entry agent).
    fn of(records: &[LedgerRecord]) -> Kind {
        match records.first() {
            Some(r) if r.to.to_string() == "lead" => Kind::Fanout,
            _ => Kind::Relay,
        }
    }

    /// The writes a run makes (one per turn).
    fn writes(self) -> usize {
        match self {
            Kind::Relay => 3,
            Kind::Fanout => 8,
        }
    }

    /// Resumes run `run` from `ledger` with this kind's workflow.
    async fn resume(
        self,
        ledger: Arc<SqliteLedger>,
        log: EffectLog,
        holder: &str,
        run: u64,
    ) -> Option<RunError> {
        match self {
            Kind::Relay => relay::Workflow::new((), log)
                .with_ledger(ledger)
                .with_holder(holder)
                .resume(run)
                .await
                .err()
                .map(|a| a.error),
            Kind::Fanout => fanout_relay::Workflow::new((), log)
                .with_ledger(ledger)
                .with_holder(holder)
                .resume(run)
                .await
                .err()
                .map(|a| a.error),
        }
    }
}

/// The lease of a child's runs: a killed child's run can be taken over
/// this long after its last write.
pub const CHILD_LEASE: Duration = Duration::from_millis(100);

/// The input of every run.
pub const INPUT: u32 = 10;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many times the child is killed.
    pub kills: usize,
    /// How many tampered copies are verified.
    pub tampers: usize,
    /// The folder for the ledger and the effect logs (emptied first).
    pub dir: PathBuf,
    /// The program that runs the child (`child_main`) and its first
    /// arguments; the ledger and the two logs are appended.
    pub child: (PathBuf, Vec<String>),
    /// The seed of the kill times and the tampering.
    pub seed: u64,
}

/// What the campaign found.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Kills made.
    pub kills: usize,
    /// Runs found in the ledger.
    pub runs: usize,
    /// Runs cut before their end.
    pub cut: usize,
    /// Runs of the parallel workflow in the ledger.
    pub fanout_runs: usize,
    /// Runs cut inside their fan-out (the last record a branch's start or
    /// outcome).
    pub cut_in_fan_out: usize,
    /// Runs whose records differ from a clean run's after resuming.
    pub lost_or_duplicated: usize,
    /// Runs that do not verify (before or after resuming).
    pub unverified: usize,
    /// Resumer pairs where the second was told the run is claimed.
    pub claimed: usize,
    /// Resumer pairs where the second found the run already ended.
    pub found_ended: usize,
    /// Resumer pairs where both resumers worked on the run.
    pub both_worked: usize,
    /// Resumes that failed for another reason.
    pub failed: Vec<String>,
    /// Writes expected (one per turn: three per relay run, six per
    /// parallel run).
    pub writes: usize,
    /// Writes whose effect did not happen exactly once.
    pub not_exactly_once: usize,
    /// Calls the resumers made twice (same call id).
    pub repeated_by_resumers: usize,
    /// Calls requested again after a kill between the write and its
    /// journal entry (deduplicated by call id).
    pub in_doubt: usize,
    /// Tampering tried and detected, by kind.
    pub tampering: BTreeMap<&'static str, (usize, usize)>,
    /// Seconds taken.
    pub seconds: f64,
}

impl Report {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.lost_or_duplicated == 0
            && self.unverified == 0
            && self.both_worked == 0
            && self.failed.is_empty()
            && self.not_exactly_once == 0
            && self.repeated_by_resumers == 0
            && self.cut > 0
            && self.tampering.values().all(|(tried, found)| tried == found)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "| check | figure |")?;
        writeln!(f, "|---|---|")?;
        writeln!(f, "| SIGKILLs of the child | {} |", self.kills)?;
        writeln!(
            f,
            "| runs in the ledger / cut mid-run | {} / {} |",
            self.runs, self.cut
        )?;
        writeln!(
            f,
            "| parallel runs / cut inside the fan-out | {} / {} |",
            self.fanout_runs, self.cut_in_fan_out
        )?;
        writeln!(
            f,
            "| runs with a transition lost or duplicated | {} |",
            self.lost_or_duplicated
        )?;
        writeln!(f, "| runs that do not verify | {} |", self.unverified)?;
        writeln!(
            f,
            "| second resumer: told the run is claimed / found it ended / also worked | {} / {} / {} |",
            self.claimed, self.found_ended, self.both_worked
        )?;
        writeln!(
            f,
            "| writes with an effect not exactly once | {} of {} |",
            self.not_exactly_once, self.writes
        )?;
        writeln!(
            f,
            "| calls made twice by the resumers | {} |",
            self.repeated_by_resumers
        )?;
        writeln!(
            f,
            "| calls requested again after a kill before their journal entry (deduplicated) | {} |",
            self.in_doubt
        )?;
        for (kind, (tried, found)) in &self.tampering {
            writeln!(f, "| tampering: {kind}, detected | {found} of {tried} |")?;
        }
        for failure in &self.failed {
            writeln!(f, "| failure | {failure} |")?;
        }
        write!(f, "| seconds | {:.1} |", self.seconds)
    }
}

/// A small deterministic generator (kill times, tampering).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The child: runs the relay and the parallel relay, one after the other,
/// over and over until it is killed.
/// Arguments: `LEDGER REQUESTS EFFECTS [fanout-first]` (with
/// `fanout-first`, the parallel relay runs first: the kill loop alternates,
/// so that kills land in both).
///
/// With `--resume LEDGER REQUESTS EFFECTS RUN DELAY_MS`: resumes run `RUN`
/// once, each write taking `DELAY_MS`, and prints `completed`, or `claimed
/// by HOLDER` when another resumer holds the run.
pub fn child_main(args: &[String]) -> std::process::ExitCode {
    if let [flag, ledger, requests, effects, run, delay] = args
        && flag == "--resume"
    {
        return resume_main(ledger, requests, effects, run, delay);
    }
    // Which workflow runs first (a kill soon after the start lands in it).
    let (ledger, requests, effects, order) = match args {
        [ledger, requests, effects] => (ledger, requests, effects, [Kind::Relay, Kind::Fanout]),
        [ledger, requests, effects, first] if first == "fanout-first" => {
            (ledger, requests, effects, [Kind::Fanout, Kind::Relay])
        }
        _ => {
            eprintln!("usage: campaign_child LEDGER REQUESTS EFFECTS [fanout-first]");
            return std::process::ExitCode::from(2);
        }
    };
    let ledger = match SqliteLedger::open_with(ledger, Durability::ProcessCrash) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open {ledger}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let log = || EffectLog {
        requests: requests.into(),
        effects: effects.into(),
        delay: Duration::ZERO,
    };
    let parallel = fanout_relay::Workflow::new((), log())
        .with_ledger(ledger.clone())
        .with_lease_ttl(CHILD_LEASE);
    let wf = relay::Workflow::new((), log())
        .with_ledger(ledger)
        .with_lease_ttl(CHILD_LEASE);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("ready");
    rt.block_on(async {
        loop {
            for kind in order {
                let ran = match kind {
                    Kind::Relay => wf.run(INPUT).await.map(|_| ()),
                    Kind::Fanout => parallel.run(INPUT).await.map(|_| ()),
                };
                if let Err(aborted) = ran {
                    eprintln!("{aborted}");
                    return std::process::ExitCode::from(1);
                }
            }
        }
    })
}

/// `child_main --resume`.
fn resume_main(
    ledger: &str,
    requests: &str,
    effects: &str,
    run: &str,
    delay: &str,
) -> std::process::ExitCode {
    let (Ok(run), Ok(delay)) = (run.parse::<u64>(), delay.parse::<u64>()) else {
        eprintln!("usage: campaign_child --resume LEDGER REQUESTS EFFECTS RUN DELAY_MS");
        return std::process::ExitCode::from(2);
    };
    let ledger = match SqliteLedger::open(ledger) {
        Ok(ledger) => Arc::new(ledger),
        Err(e) => {
            eprintln!("cannot open {ledger}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let log = EffectLog {
        requests: requests.into(),
        effects: effects.into(),
        delay: Duration::from_millis(delay),
    };
    let wf = relay::Workflow::new((), log).with_ledger(ledger);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    match rt.block_on(wf.resume(run)) {
        Ok(_) => println!("completed"),
        Err(aborted) => match aborted.error {
            RunError::Ledger(LedgerError::Claimed { holder, .. }) => {
                println!("claimed by {holder}")
            }
            error => {
                eprintln!("{error}");
                return std::process::ExitCode::from(1);
            }
        },
    }
    std::process::ExitCode::SUCCESS
}

/// A run's records without what differs between runs.
fn content(records: &[LedgerRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let calls: Vec<String> = r
                .turn
                .iter()
                .flat_map(|t| &t.tool_calls)
                .map(|c| format!("{}#{}", c.tool, c.index))
                .collect();
            format!(
                "#{} {} {} -> {} {:?} {} {calls:?}",
                r.seq, r.hop, r.from, r.to, r.receipt, r.payload
            )
        })
        .collect()
}

/// The lines of a log: `(run, key)` per line.
fn lines(path: &Path) -> Vec<(u64, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut words = l.split(' ');
            Some((words.next()?.parse().ok()?, words.next()?.to_owned()))
        })
        .collect()
}

/// Runs the campaign.
pub fn run(config: &Config) -> Result<Report, String> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&config.dir);
    std::fs::create_dir_all(&config.dir).map_err(|e| e.to_string())?;
    let path = config.dir.join("runs.db");
    let requests = config.dir.join("requests.log");
    let effects = config.dir.join("effects.log");
    let mut rng = Lcg(config.seed);
    let mut report = Report {
        kills: config.kills,
        ..Report::default()
    };

    // 1. The kill loop.
    for kill in 0..config.kills {
        let mut child = Command::new(&config.child.0);
        child
            .args(&config.child.1)
            .arg(&path)
            .arg(&requests)
            .arg(&effects);
        if kill % 2 == 1 {
            child.arg("fanout-first");
        }
        let mut process = child
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("the child does not start: {e}"))?;
        // Killed at a random moment after it is ready (however slow the
        // machine is to start it).
        if let Some(stdout) = process.stdout.take() {
            let mut ready = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready)
                .map_err(|e| e.to_string())?;
        }
        std::thread::sleep(Duration::from_micros(2_000 + rng.next() % 20_000));
        process.kill().map_err(|e| e.to_string())?;
        let output = process.wait_with_output().map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !stderr.is_empty() {
            return Err(format!("the child failed on its own: {stderr}"));
        }
    }
    // The last children's leases run out.
    std::thread::sleep(CHILD_LEASE * 2);

    // 2. Two resumers per run, each with its own connection.
    let clean_relay = clean_run(&config.dir, Kind::Relay)?;
    let clean_fanout = clean_run(&config.dir, Kind::Fanout)?;
    let ledger = SqliteLedger::open(&path).map_err(|e| e.to_string())?;
    let runs = ledger.runs().map_err(|e| e.to_string())?;
    report.runs = runs.len();
    let before_resumes = lines(&requests).len();
    let mut kinds: BTreeMap<u64, Kind> = BTreeMap::new();
    for run in &runs {
        let records = ledger.records(*run).map_err(|e| e.to_string())?;
        let kind = Kind::of(&records);
        let clean = match kind {
            Kind::Relay => &clean_relay,
            Kind::Fanout => &clean_fanout,
        };
        if kind == Kind::Fanout {
            report.fanout_runs += 1;
        }
        if !verifies(&ledger, *run)? {
            report.unverified += 1;
        }
        if records.len() < clean.len() {
            report.cut += 1;
        }
        if let Some(
            workflow_core::Lineage::Start { .. }
            | workflow_core::Lineage::Step { .. }
            | workflow_core::Lineage::Outcome { .. },
        ) = records.last().and_then(|r| r.lineage.as_ref())
        {
            report.cut_in_fan_out += 1;
        }
        kinds.insert(*run, kind);
        resume_twice(&path, &requests, &effects, *run, kind, &mut report)?;
        let records = ledger.records(*run).map_err(|e| e.to_string())?;
        if content(&records) != *clean {
            report.lost_or_duplicated += 1;
        }
        if !verifies(&ledger, *run)? {
            report.unverified += 1;
        }
    }
    let all_requests = lines(&requests);
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, key) in &all_requests[before_resumes..] {
        *per_key.entry(key).or_default() += 1;
    }
    report.repeated_by_resumers = per_key.values().filter(|n| **n > 1).count();
    let mut requested: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, key) in &all_requests {
        *requested.entry(key).or_default() += 1;
    }
    report.in_doubt = requested.values().filter(|n| **n > 1).count();
    let mut made: BTreeMap<(u64, String), usize> = BTreeMap::new();
    for (run, key) in lines(&effects) {
        *made.entry((run, key)).or_default() += 1;
    }
    for run in &runs {
        let expected = kinds.get(run).map_or(3, |k| k.writes());
        report.writes += expected;
        let counts: Vec<usize> = made
            .iter()
            .filter(|((r, _), _)| r == run)
            .map(|(_, n)| *n)
            .collect();
        let once = counts.iter().filter(|n| **n == 1).count();
        // Missing, made twice, or more than expected.
        report.not_exactly_once += expected.abs_diff(once) + (counts.len() - once);
    }
    drop(ledger);

    // 3. Tampering, on copies.
    crate::campaign_tamper::tamper(
        &path,
        &config.dir,
        config.tampers,
        &mut |n| rng.below(n),
        &mut report,
    )?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The records of a run of `kind` nobody killed.
fn clean_run(dir: &Path, kind: Kind) -> Result<Vec<String>, String> {
    let ledger = Arc::new(workflow_core::ledger::MemoryLedger::new());
    let log = EffectLog {
        requests: dir.join("clean-requests.log"),
        effects: dir.join("clean-effects.log"),
        delay: Duration::ZERO,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let run_id = match kind {
        Kind::Relay => {
            let wf = relay::Workflow::new((), log).with_ledger(ledger.clone());
            rt.block_on(wf.run(INPUT))
                .map_err(|e| format!("the clean run: {e}"))?
                .transcript
                .run_id()
        }
        Kind::Fanout => {
            let wf = fanout_relay::Workflow::new((), log).with_ledger(ledger.clone());
            rt.block_on(wf.run(INPUT))
                .map_err(|e| format!("the clean parallel run: {e}"))?
                .transcript
                .run_id()
        }
    };
    let records = ledger.records(run_id).map_err(|e| e.to_string())?;
    Ok(content(&records))
}

/// Resumes `run` from two threads at once, each with its own connection.
fn resume_twice(
    path: &Path,
    requests: &Path,
    effects: &Path,
    run: u64,
    kind: Kind,
    report: &mut Report,
) -> Result<(), String> {
    let barrier = Arc::new(Barrier::new(2));
    let resumer = |name: &'static str| {
        let (path, barrier) = (path.to_owned(), barrier.clone());
        let log = EffectLog {
            requests: requests.to_owned(),
            effects: effects.to_owned(),
            delay: Duration::ZERO,
        };
        std::thread::spawn(move || -> Result<Option<RunError>, String> {
            let ledger = Arc::new(SqliteLedger::open(&path).map_err(|e| e.to_string())?);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            barrier.wait();
            Ok(rt.block_on(kind.resume(ledger, log, name, run)))
        })
    };
    let (a, b) = (resumer("resumer a"), resumer("resumer b"));
    let a = a.join().map_err(|_| "a resumer panicked".to_owned())??;
    let b = b.join().map_err(|_| "a resumer panicked".to_owned())??;
    match (a, b) {
        (None, None) => {
            // Both returned the output: one worked, the other found the run
            // ended after the first released it (or it had ended before).
            report.found_ended += 1;
        }
        (None, Some(RunError::Ledger(LedgerError::Claimed { .. })))
        | (Some(RunError::Ledger(LedgerError::Claimed { .. })), None) => report.claimed += 1,
        (a, b) => {
            if a.is_some() && b.is_some() {
                report.both_worked += 1;
            }
            report.failed.push(format!(
                "run {run}: {:?} / {:?}",
                a.map(|e| e.to_string()),
                b.map(|e| e.to_string())
            ));
        }
    }
    Ok(())
}

/// Whether run `run` verifies; a ledger that cannot be read is an error.
fn verifies(ledger: &SqliteLedger, run: u64) -> Result<bool, String> {
    match ledger.verify_run(run) {
        Ok(()) => Ok(true),
        Err(workflow_core::ledger::VerifyError::Tampered(_)) => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}
