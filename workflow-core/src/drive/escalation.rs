//! Human escalation: a suspended run, saved as its records, and the
//! decision a person takes on it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ledger::{LedgerError, LedgerRecord, PayloadFormat};
use crate::spec::{Endpoint, Escalation, Lineage, Mode, Receipt, SenderScope, TurnRecord};

/// A run waiting for a person's decision: its records up to the escalated
/// transfer, hash-chained. Without a durable ledger it travels as bytes
/// ([`to_bytes`](Self::to_bytes)); with one, `Executor::suspension` reads it
/// back after a restart.
///
/// It is kept for as long as the person takes, so it holds its records
/// compactly (payloads and hashes as bytes rather than hex text, the names
/// every record repeats once): about half the memory of the
/// [`LedgerRecord`]s it is made of. [`records`](Self::records) gives them
/// back exactly, and its JSON ([`to_bytes`](Self::to_bytes)) is theirs:
/// `{"records": [..]}`.
#[derive(Clone, PartialEq)]
pub struct Suspension {
    /// The run's records, the escalated transfer last.
    records: Vec<HeldRecord>,
}

/// A run waiting for a person's decision: its records up to the escalated
/// transfer, hash-chained. Without a durable ledger it travels as bytes
/// ([`to_bytes`](Self::to_bytes)); with one, `Executor::suspension` reads it
/// back after a restart.
// What a suspension's JSON is, and its schema (the doc comment above is
// its description, word for word what it always was): the records as
// they are.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename = "Suspension")]
struct SuspensionJson {
    /// The run's records, the escalated transfer last.
    records: Vec<LedgerRecord>,
}

impl Suspension {
    /// The suspension of a run whose last record is escalated; `None` when
    /// it is not.
    pub fn from_records(records: Vec<LedgerRecord>) -> Option<Suspension> {
        Suspension::ends_escalated(&records).then(|| Suspension::hold(records))
    }

    /// Whether `records` are a suspended run's: the last one escalated.
    pub fn ends_escalated(records: &[LedgerRecord]) -> bool {
        records
            .last()
            .is_some_and(|r| matches!(r.receipt, Receipt::Escalated { .. }))
    }

    /// `records` held compactly, escalated last or not (checked by
    /// [`from_records`](Self::from_records), [`from_bytes`](Self::from_bytes)
    /// and the decision).
    fn hold(records: Vec<LedgerRecord>) -> Suspension {
        let mut names = Names::default();
        let mut held: Vec<HeldRecord> = records
            .into_iter()
            .map(|r| HeldRecord::of(r, &mut names))
            .collect();
        held.shrink_to_fit();
        Suspension { records: held }
    }

    /// The run's records, the escalated transfer last: exactly the records
    /// the suspension was made of.
    pub fn records(&self) -> Vec<LedgerRecord> {
        self.records.iter().map(HeldRecord::record).collect()
    }

    /// How many records the suspension holds.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether it holds no record (never, for one made by
    /// [`from_records`](Self::from_records) or [`from_bytes`](Self::from_bytes)).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The run.
    pub fn run_id(&self) -> u64 {
        self.records.first().map_or(0, |r| r.run_id)
    }

    /// The escalated transfer's record.
    pub fn transfer(&self) -> Option<LedgerRecord> {
        self.records.last().map(HeldRecord::record)
    }

    /// Why the run waits.
    pub fn reason(&self) -> Option<&Escalation> {
        match self.records.last()?.receipt.as_deref()? {
            Receipt::Escalated { reason } => Some(reason),
            _ => None,
        }
    }

    /// The escalated payload as JSON text, for the person to read (and
    /// edit).
    pub fn payload_json(&self) -> Result<String, String> {
        let r = self.records.last().ok_or("no records")?;
        let corrupt =
            |e: &dyn std::fmt::Display| LedgerError::Corrupt(format!("payload of #{}: {e}", r.seq));
        let bytes = r.payload.bytes().map_err(|e| corrupt(&e).to_string())?;
        crate::encode::to_json(r.payload_format, &bytes).map_err(|e| corrupt(&e).to_string())
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
        let s: SuspensionJson = crate::encode::from_json_text(text).map_err(|e| e.to_string())?;
        Suspension::from_records(s.records)
            .ok_or_else(|| "the records do not end with an escalated transfer".into())
    }
}

impl std::fmt::Debug for Suspension {
    /// As its records.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suspension")
            .field("records", &self.records())
            .finish()
    }
}

impl Serialize for Suspension {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SuspensionJson {
            records: self.records(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Suspension {
    /// The records as they are, escalated last or not: a decision on
    /// records that are not a suspended run is refused when it is applied.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        SuspensionJson::deserialize(deserializer).map(|s| Suspension::hold(s.records))
    }
}

impl JsonSchema for Suspension {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        SuspensionJson::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        // This type's path, as the derive would have given it.
        std::borrow::Cow::Borrowed(concat!(module_path!(), "::Suspension"))
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SuspensionJson::json_schema(generator)
    }
}

/// One record as a suspension holds it: a [`LedgerRecord`] with its hex
/// text as bytes, the workflow's and payload type's names shared with the
/// records before it, an accepted receipt as nothing and the parts most
/// records lack behind one pointer. [`record`](Self::record) gives back
/// the record it was made of, field for field.
#[derive(Debug, Clone, PartialEq)]
struct HeldRecord {
    workflow: Arc<str>,
    payload_type: Arc<str>,
    run_id: u64,
    seq: u32,
    hop: u32,
    from: Endpoint,
    to: Endpoint,
    payload_format: PayloadFormat,
    redelivery: bool,
    mode: Mode,
    at_us: u64,
    /// `None`: accepted.
    receipt: Option<Box<Receipt>>,
    payload: Hex,
    prev_hash: Hash,
    hash: Hash,
    /// On every record an agent sent under a lease.
    sender_scope: Option<SenderScope>,
    uncommon: Option<Box<UncommonParts>>,
}

/// The parts of a record most records lack.
#[derive(Debug, Clone, PartialEq, Default)]
struct UncommonParts {
    turn: Option<TurnRecord>,
    trace_id: String,
    span_id: String,
    root: Option<String>,
    lineage: Option<Lineage>,
}

/// Hex text held as the bytes it spells, when writing those bytes back as
/// hex gives the same text (lowercase, whole bytes); any other text as it
/// is, so that nothing read is changed.
#[derive(Debug, Clone, PartialEq)]
enum Hex {
    Bytes(Box<[u8]>),
    Text(Box<str>),
}

impl Hex {
    fn of(text: String) -> Hex {
        match hex::decode(&text) {
            Ok(bytes) if hex::encode(&bytes) == text => Hex::Bytes(bytes.into_boxed_slice()),
            _ => Hex::Text(text.into_boxed_str()),
        }
    }

    fn text(&self) -> String {
        match self {
            Hex::Bytes(bytes) => hex::encode(bytes),
            Hex::Text(text) => text.to_string(),
        }
    }

    /// The bytes it spells (an error for text that is not hex).
    fn bytes(&self) -> Result<std::borrow::Cow<'_, [u8]>, hex::FromHexError> {
        match self {
            Hex::Bytes(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
            Hex::Text(text) => hex::decode(text.as_bytes()).map(std::borrow::Cow::Owned),
        }
    }
}

/// A SHA-256 in hex held as its 32 bytes, inline; any other text as it is.
#[derive(Debug, Clone, PartialEq)]
enum Hash {
    Sha256([u8; 32]),
    Text(Box<str>),
}

impl Hash {
    fn of(text: String) -> Hash {
        let mut bytes = [0; 32];
        match hex::decode_to_slice(&text, &mut bytes) {
            Ok(()) if hex::encode(bytes) == text => Hash::Sha256(bytes),
            _ => Hash::Text(text.into_boxed_str()),
        }
    }

    fn text(&self) -> String {
        match self {
            Hash::Sha256(bytes) => hex::encode(bytes),
            Hash::Text(text) => text.to_string(),
        }
    }
}

/// The names the records so far hold, shared with the next record that
/// repeats one.
#[derive(Default)]
struct Names {
    seen: std::collections::HashSet<Arc<str>>,
}

impl Names {
    fn share(&mut self, name: String) -> Arc<str> {
        if let Some(same) = self.seen.get(name.as_str()) {
            return same.clone();
        }
        let name: Arc<str> = name.into();
        self.seen.insert(name.clone());
        name
    }
}

impl HeldRecord {
    fn of(r: LedgerRecord, names: &mut Names) -> HeldRecord {
        let uncommon = UncommonParts {
            turn: r.turn,
            trace_id: r.trace_id,
            span_id: r.span_id,
            root: r.root,
            lineage: r.lineage,
        };
        HeldRecord {
            workflow: names.share(r.workflow),
            payload_type: names.share(r.payload_type),
            run_id: r.run_id,
            seq: r.seq,
            hop: r.hop,
            from: r.from,
            to: r.to,
            payload_format: r.payload_format,
            redelivery: r.redelivery,
            mode: r.mode,
            at_us: r.at_us,
            receipt: match r.receipt {
                Receipt::Accepted => None,
                other => Some(Box::new(other)),
            },
            payload: Hex::of(r.payload),
            prev_hash: Hash::of(r.prev_hash),
            hash: Hash::of(r.hash),
            sender_scope: r.sender_scope,
            uncommon: (uncommon != UncommonParts::default()).then(|| Box::new(uncommon)),
        }
    }

    fn record(&self) -> LedgerRecord {
        let uncommon = self.uncommon.as_deref().cloned().unwrap_or_default();
        LedgerRecord {
            workflow: self.workflow.to_string(),
            run_id: self.run_id,
            seq: self.seq,
            hop: self.hop,
            from: self.from.clone(),
            to: self.to.clone(),
            payload_type: self.payload_type.to_string(),
            payload_format: self.payload_format,
            payload: self.payload.text(),
            receipt: self
                .receipt
                .as_deref()
                .cloned()
                .unwrap_or(Receipt::Accepted),
            at_us: self.at_us,
            redelivery: self.redelivery,
            turn: uncommon.turn,
            trace_id: uncommon.trace_id,
            span_id: uncommon.span_id,
            root: uncommon.root,
            mode: self.mode,
            sender_scope: self.sender_scope.clone(),
            lineage: uncommon.lineage,
            prev_hash: self.prev_hash.text(),
            hash: self.hash.text(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::spec::{Expiry, Usage};

    fn record(seq: u32) -> LedgerRecord {
        LedgerRecord {
            workflow: "deploy".into(),
            run_id: 7,
            seq,
            hop: seq + 10,
            from: Endpoint::Agent(Cow::Owned("planner".into())),
            to: Endpoint::Agent(Cow::Owned("worker".into())),
            payload_type: "Work".into(),
            payload_format: PayloadFormat::Msgpack,
            payload: "81a16101".into(),
            receipt: Receipt::Accepted,
            at_us: 1_000 + u64::from(seq),
            redelivery: false,
            turn: None,
            trace_id: String::new(),
            span_id: String::new(),
            root: None,
            mode: Mode::Enforce,
            sender_scope: Some(SenderScope {
                authority: "deploy".into(),
                expires: Expiry::AtHop(9),
            }),
            lineage: None,
            prev_hash: "ab".repeat(32),
            hash: "cd".repeat(32),
        }
    }

    /// Records with every field used, and hex text that is not canonical.
    fn records() -> Vec<LedgerRecord> {
        let mut first = record(0);
        first.from = Endpoint::Start;
        first.sender_scope = None;
        first.root = Some(r#"{"tenant":"a"}"#.into());
        first.prev_hash = crate::ledger::GENESIS.into();
        first.trace_id = "0af7651916cd43dd8448eb211c80319c".into();
        first.span_id = "b7ad6b7169203331".into();
        let mut second = record(1);
        second.turn = Some(TurnRecord {
            agent: "planner".into(),
            input_seq: 0,
            tool_calls: Vec::new(),
            model_calls: Vec::new(),
            usage: Usage::default(),
            unresolved: vec!["which region?".into()],
            leases: Vec::new(),
        });
        second.lineage = Some(Lineage::Start { fork: 0, branch: 1 });
        second.mode = Mode::Audit;
        second.redelivery = true;
        // Uppercase, odd-length and empty hex, and a hash that is not one:
        // held as text, read back unchanged.
        second.payload = "81A16101".into();
        second.prev_hash = "not a hash".into();
        let mut third = record(2);
        third.payload = "81a1610".into();
        third.payload_format = PayloadFormat::Json;
        third.hash = "AB".repeat(32);
        let mut failed = record(3);
        failed.receipt = Receipt::TurnFailed {
            error: "the worker failed".into(),
        };
        let mut last = record(4);
        last.payload = String::new();
        last.receipt = Receipt::Escalated {
            reason: Escalation::Requested {
                question: "may I?".into(),
            },
        };
        vec![first, second, third, failed, last]
    }

    #[test]
    fn a_suspension_gives_back_exactly_the_records_it_was_made_of() {
        let records = records();
        let s = Suspension::from_records(records.clone()).expect("escalated last");
        assert_eq!(s.records(), records);
        assert_eq!(s.len(), 5);
        assert_eq!(s.run_id(), 7);
        assert_eq!(s.transfer().as_ref(), records.last());
        assert!(matches!(
            s.reason(),
            Some(Escalation::Requested { question }) if question == "may I?"
        ));
        // Its JSON is the records' own, as it always was.
        let json = format!(
            r#"{{"records":{}}}"#,
            serde_json::to_string(&records).unwrap()
        );
        let json = json.into_bytes();
        assert_eq!(s.to_bytes(), json);
        assert_eq!(Suspension::from_bytes(&json).unwrap(), s);
        // Canonical hex held as bytes, anything else as the text it was.
        assert!(matches!(s.records[0].payload, Hex::Bytes(_)));
        assert!(matches!(s.records[0].hash, Hash::Sha256(_)));
        assert!(matches!(s.records[1].payload, Hex::Text(_)));
        assert!(matches!(s.records[1].prev_hash, Hash::Text(_)));
        assert!(matches!(s.records[2].payload, Hex::Text(_)));
        assert!(matches!(s.records[2].hash, Hash::Text(_)));
        assert!(matches!(s.records[4].payload, Hex::Bytes(_)));
        // The names every record repeats, held once.
        assert!(Arc::ptr_eq(&s.records[0].workflow, &s.records[4].workflow));
        assert!(Arc::ptr_eq(
            &s.records[1].payload_type,
            &s.records[2].payload_type
        ));
        // Most records (accepted, no turn, no trace link) hold no box.
        assert!(s.records[2].receipt.is_none() && s.records[2].uncommon.is_none());
        assert!(s.records[1].uncommon.is_some() && s.records[3].receipt.is_some());
        // Shown as its records.
        assert_eq!(
            format!("{s:?}"),
            format!("Suspension {{ records: {records:?} }}")
        );
        // Under half a record's size inline.
        assert!(std::mem::size_of::<HeldRecord>() * 2 <= std::mem::size_of::<LedgerRecord>());
    }

    #[test]
    fn records_that_are_not_a_suspended_run_are_refused() {
        let mut records = records();
        records.pop();
        assert!(Suspension::from_records(records.clone()).is_none());
        let json = format!(
            r#"{{"records":{}}}"#,
            serde_json::to_string(&records).unwrap()
        );
        assert!(Suspension::from_bytes(json.as_bytes()).is_err());
        // Read as a value, they are held (the decision refuses them).
        let held: Suspension = serde_json::from_str(&json).unwrap();
        assert_eq!(held.records(), records);
        assert_eq!(held.reason(), None);
        assert!(Suspension::from_records(Vec::new()).is_none());
    }

    mod before {
        use super::*;

        /// A run waiting for a person's decision: its records up to the escalated
        /// transfer, hash-chained. Without a durable ledger it travels as bytes
        /// ([`to_bytes`](Self::to_bytes)); with one, `Executor::suspension` reads it
        /// back after a restart.
        #[derive(Serialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct Suspension {
            /// The run's records, the escalated transfer last.
            pub records: Vec<LedgerRecord>,
        }
    }

    #[test]
    fn the_schema_and_the_json_are_what_the_records_field_gave() {
        assert_eq!(
            serde_json::to_value(schemars::schema_for!(Suspension)).unwrap(),
            serde_json::to_value(schemars::schema_for!(before::Suspension)).unwrap()
        );
        assert_eq!(
            Suspension::schema_id(),
            concat!(module_path!(), "::before::Suspension").replace("::tests::before", "")
        );
        let records = records();
        let s = Suspension::from_records(records.clone()).unwrap();
        assert_eq!(
            s.to_bytes(),
            serde_json::to_vec(&before::Suspension { records }).unwrap()
        );
    }

    #[test]
    fn a_payload_that_is_not_hex_is_named_as_corrupt() {
        let mut records = records();
        records.last_mut().unwrap().payload = "zz".into();
        let s = Suspension::from_records(records).unwrap();
        let error = s.payload_json().unwrap_err();
        assert!(
            error.starts_with("ledger record is corrupt: payload of #4: "),
            "{error}"
        );
    }
}
