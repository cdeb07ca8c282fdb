//! Human escalation: a suspended run, saved as its records, and the
//! decision a person takes on it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ledger::LedgerRecord;
use crate::spec::{Escalation, Receipt};

/// A run waiting for a person's decision: its records up to the escalated
/// transfer, hash-chained. Without a durable ledger it travels as bytes
/// ([`to_bytes`](Self::to_bytes)); with one, `Executor::suspension` reads it
/// back after a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Suspension {
    /// The run's records, the escalated transfer last.
    pub records: Vec<LedgerRecord>,
}

impl Suspension {
    /// The suspension of a run whose last record is escalated; `None` when
    /// it is not.
    pub fn from_records(records: Vec<LedgerRecord>) -> Option<Suspension> {
        matches!(records.last()?.receipt, Receipt::Escalated { .. })
            .then_some(Suspension { records })
    }

    /// The run.
    pub fn run_id(&self) -> u64 {
        self.records.first().map_or(0, |r| r.run_id)
    }

    /// The escalated transfer.
    pub fn transfer(&self) -> Option<&LedgerRecord> {
        self.records.last()
    }

    /// Why the run waits.
    pub fn reason(&self) -> Option<&Escalation> {
        match &self.records.last()?.receipt {
            Receipt::Escalated { reason } => Some(reason),
            _ => None,
        }
    }

    /// The escalated payload as JSON text, for the person to read (and
    /// edit).
    pub fn payload_json(&self) -> Result<String, String> {
        let r = self.records.last().ok_or("no records")?;
        let bytes = r.payload_bytes().map_err(|e| e.to_string())?;
        crate::encode::to_json(r.payload_format, &bytes).map_err(|e| e.to_string())
    }

    /// The suspension as bytes (JSON), to store anywhere.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        // Kept by the caller, maybe for long: not the writer's doubled capacity.
        bytes.shrink_to_fit();
        bytes
    }

    /// A suspension read back from [`to_bytes`](Self::to_bytes); its chain
    /// is verified when a decision is applied.
    pub fn from_bytes(bytes: &[u8]) -> Result<Suspension, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
        let s: Suspension = crate::encode::from_json_text(text).map_err(|e| e.to_string())?;
        if Suspension::from_records(s.records.clone()).is_none() {
            return Err("the records do not end with an escalated transfer".into());
        }
        Ok(s)
    }
}
