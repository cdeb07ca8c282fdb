//! Signed checkpoints: `keygen`, `checkpoint`, and `verify --checkpoint`.

use std::io::Write;
use std::path::{Path, PathBuf};

use workflow_core::ledger::{Checkpoint, CheckpointKey, CheckpointPublicKey, SignedCheckpoint};

use crate::{BadInput, Command, ledger_commands, say};

/// `KEY.pub` beside `KEY`.
fn public_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Writes `text` to a new file at `path` (never over an existing one),
/// readable by its owner only when `secret`.
fn create(path: &Path, text: &str, secret: bool) -> Result<(), BadInput> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    options
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))
}

fn read(path: &Path, what: &str) -> Result<String, BadInput> {
    std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("cannot read the {what} {}: {e}", path.display())))
}

/// `workflow keygen --out KEY`: a new key, the secret to KEY, the public
/// key to KEY.pub; neither file may exist.
pub(crate) fn keygen(path: &Path, out: &mut dyn Write) -> Result<bool, BadInput> {
    let public = public_path(path);
    for p in [path, public.as_path()] {
        if p.exists() {
            return Err(BadInput(format!(
                "{} exists: a key is never overwritten (choose another --out)",
                p.display()
            )));
        }
    }
    let key = CheckpointKey::generate().map_err(|e| BadInput(e.to_string()))?;
    create(path, &format!("{}\n", key.to_hex()), true)?;
    create(&public, &format!("{}\n", key.public_key().to_hex()), false)?;
    say(
        out,
        format_args!(
            "secret key {} (keep it away from the ledger), public key {}",
            path.display(),
            public.display()
        ),
    );
    Ok(true)
}

/// `workflow checkpoint --key KEY --out FILE`: the ledger's heads, signed.
pub(crate) fn checkpoint(
    ledger: &Path,
    key: &Path,
    path: &Path,
    out: &mut dyn Write,
) -> Result<bool, BadInput> {
    let key = CheckpointKey::from_hex(&read(key, "secret key")?)
        .map_err(|e| BadInput(format!("{}: {e}", key.display())))?;
    let opened = ledger_commands::open(ledger)?;
    let checkpoint = Checkpoint::take(&*opened).map_err(|e| BadInput(e.to_string()))?;
    let signed = checkpoint.sign(&key).map_err(|e| BadInput(e.to_string()))?;
    // Written beside, then renamed: a crash never leaves half a checkpoint.
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let _ = std::fs::remove_file(&partial);
    create(&partial, &signed.to_json(), false)?;
    std::fs::rename(&partial, path)
        .map_err(|e| BadInput(format!("cannot write {}: {e}", path.display())))?;
    say(
        out,
        format_args!(
            "checkpoint of {} runs ({} records) signed by {}, written to {}",
            checkpoint.heads.len(),
            checkpoint.records,
            signed.public_key,
            path.display()
        ),
    );
    Ok(true)
}

/// `workflow verify --checkpoint FILE --public-key PUB [RUNS]`: the
/// checkpoint's signature first (exit 2 when it does not verify), then
/// every run's chain as `verify` checks it, then the ledger against the
/// checkpoint, each finding named.
pub(crate) fn verify(
    ledger: &Path,
    runs: Vec<u64>,
    checkpoint: &Path,
    public_key: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<bool, BadInput> {
    let public = CheckpointPublicKey::from_hex(&read(public_key, "public key")?)
        .map_err(|e| BadInput(format!("{}: {e}", public_key.display())))?;
    let signed = SignedCheckpoint::from_json(&read(checkpoint, "checkpoint")?)
        .map_err(|e| BadInput(format!("{}: {e}", checkpoint.display())))?;
    let trusted = signed
        .verify(&public)
        .map_err(|e| BadInput(format!("{}: {e}", checkpoint.display())))?;
    let plain = Command::Verify {
        runs,
        checkpoint: None,
        public_key: None,
    };
    let chains_hold = ledger_commands::run(ledger, plain, out, err)?;
    let opened = ledger_commands::open(ledger)?;
    let findings = trusted
        .check(&*opened)
        .map_err(|e| BadInput(e.to_string()))?;
    for finding in &findings {
        say(out, format_args!("checkpoint: {finding}"));
    }
    if findings.is_empty() {
        say(
            out,
            format_args!(
                "checkpoint: all {} runs as signed ({} records, taken at {} ms since the epoch)",
                trusted.heads.len(),
                trusted.records,
                trusted.taken_at_ms
            ),
        );
    }
    Ok(chains_hold && findings.is_empty())
}
