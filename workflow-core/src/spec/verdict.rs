//! Verdicts at a join: the field of a branch's output that says what the
//! branch concluded (`#[verdict]`), and the disagreement between branches
//! that a join must carry forward.
//!
//! The rule (checked by the run, never by trusting the join agent): when
//! the branches that ended `Done` gave different verdicts, the join agent's
//! outgoing handoff carries the disagreement forward, either as an open
//! question naming every such branch and its verdict, or as evidence that
//! cites the outcome record of every such branch (it weighed them all).
//! Otherwise the handoff is rejected with
//! [`RejectReason::VerdictDropped`](crate::spec::RejectReason::VerdictDropped).

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::{Citation, ContractView, Evidence, Uncertainty};

/// A branch output type with a verdict: one field that says what the branch
/// concluded (approve, block, a score). Derived with `#[derive(Verdict)]`
/// and one field marked `#[verdict]`.
pub trait Verdict {
    /// The name of the verdict field.
    const VERDICT_FIELD: &'static str;
    /// The verdict as text: a string as it is, any other value as its JSON
    /// text (`true`, `3`, `{"level":2}`); `None` when the field is `null`
    /// (an `Option` that is `None`) or does not serialize.
    fn verdict(&self) -> Option<String>;
}

/// The text of a verdict value: a string as it is, any other value as its
/// JSON text, `None` for `null` or a value that does not serialize.
#[doc(hidden)] // for `#[derive(Verdict)]`
pub fn verdict_text<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    match serde_json::to_value(value).ok()? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// What one branch of a fan-out concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BranchVerdict {
    /// The branch's name (its agent's name).
    pub branch: Cow<'static, str>,
    /// Its verdict as text (see [`Verdict::verdict`]).
    pub verdict: String,
    /// The citation of the branch's outcome record (its output handed to
    /// the join, with its digest), when the run knows it: what resolving
    /// evidence cites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<Citation>,
    /// A map's item: the branch's place in its fan-out (its name alone,
    /// the mapped agent's, is every item's). Not part of the record: the
    /// run places the verdict by it, then cites the item's outcome.
    #[serde(skip)]
    pub(crate) item: Option<u16>,
}

impl BranchVerdict {
    /// Branch `branch`'s verdict `verdict`.
    pub fn new(branch: impl Into<Cow<'static, str>>, verdict: impl Into<String>) -> Self {
        BranchVerdict {
            branch: branch.into(),
            verdict: verdict.into(),
            record: None,
            item: None,
        }
    }

    /// The verdict `verdict` of item `item` of a map over agent `agent`
    /// (the branch is named `agent[item]`).
    pub fn of_item(agent: &str, item: u16, verdict: impl Into<String>) -> Self {
        BranchVerdict {
            item: Some(item),
            ..BranchVerdict::new(format!("{agent}[{item}]"), verdict)
        }
    }
}

impl fmt::Display for BranchVerdict {
    /// `security: "block"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}", self.branch, self.verdict)
    }
}

/// The join's view of a fan-out whose branches gave different verdicts:
/// every verdict-bearing branch and what it concluded, in branch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Disagreement {
    /// The record the fan-out agent's turn worked on (the fan-out's id).
    pub fork: u32,
    /// Every branch that ended `Done` with a verdict, in branch order.
    pub verdicts: Vec<BranchVerdict>,
}

impl Disagreement {
    /// The disagreement among `verdicts`, if they are not all the same
    /// (`None` for fewer than two distinct verdicts: agreeing branches need
    /// nothing).
    pub fn among(fork: u32, verdicts: Vec<BranchVerdict>) -> Option<Self> {
        let first = verdicts.first()?;
        if verdicts.iter().all(|v| v.verdict == first.verdict) {
            return None;
        }
        Some(Disagreement { fork, verdicts })
    }

    /// The open question that carries the disagreement forward:
    /// `the branches disagree: security says "block", style says "approve"`.
    pub fn question(&self) -> String {
        let said: Vec<String> = self
            .verdicts
            .iter()
            .map(|v| format!("{} says {:?}", v.branch, v.verdict))
            .collect();
        format!("the branches disagree: {}", said.join(", "))
    }

    /// The uncertainty item that carries the disagreement forward, with
    /// what could go wrong because of it.
    pub fn uncertainty(&self, impact: impl Into<String>) -> Uncertainty {
        Uncertainty::new(self.question(), impact)
    }

    /// Evidence that resolves the disagreement: `claim` says how the
    /// branches were weighed; it resolves [`Disagreement::question`] and
    /// cites the outcome record of every branch (as the run's
    /// [`Context::disagreement`] gives them; a disagreement built from
    /// values by [`Disagreement::among`] knows no records, and its evidence
    /// cites nothing, which does not carry it).
    ///
    /// [`Context::disagreement`]: crate::Context::disagreement
    pub fn resolution(
        &self,
        source: impl Into<Cow<'static, str>>,
        claim: impl Into<Cow<'static, str>>,
    ) -> Evidence {
        let mut evidence = Evidence::complete(source, claim);
        evidence.resolves = Some(self.question());
        evidence.cites = self
            .verdicts
            .iter()
            .filter_map(|v| v.record.clone())
            .collect();
        evidence
    }

    /// Whether `contract` carries the disagreement forward: an open
    /// question that names every branch and its verdict, or an evidence
    /// item that cites the outcome record of every branch. A payload that
    /// is not a handoff (`None`) carries nothing.
    pub fn carried_by(&self, contract: Option<&ContractView<'_>>) -> bool {
        let Some(c) = contract else {
            return false;
        };
        let names_all = |text: &str| {
            self.verdicts
                .iter()
                .all(|v| text.contains(v.branch.as_ref()) && text.contains(v.verdict.as_str()))
        };
        if c.open.questions().into_iter().any(names_all) {
            return true;
        }
        c.evidence.items().iter().any(|e| {
            self.verdicts
                .iter()
                .all(|v| v.record.as_ref().is_some_and(|r| e.cites.contains(r)))
        })
    }
}

impl fmt::Display for Disagreement {
    /// `security: "block", style: "approve"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.verdicts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

/// The verdict of a value if its type derives [`Verdict`], `None`
/// otherwise: `(&VerdictProbe(x)).verdict_of()` with both traits in scope
/// (method resolution picks [`VerdictOfVerdict`] when it applies). For
/// generated joins, whose branch output types may or may not have one.
#[doc(hidden)]
pub struct VerdictProbe<'a, T>(pub &'a T);

/// The probe's answer for a type with a verdict.
#[doc(hidden)]
pub trait VerdictOfVerdict {
    /// The value's verdict.
    fn verdict_of(&self) -> Option<String>;
}

impl<T: Verdict> VerdictOfVerdict for VerdictProbe<'_, T> {
    fn verdict_of(&self) -> Option<String> {
        self.0.verdict()
    }
}

/// The probe's answer for any other type: none.
#[doc(hidden)]
pub trait VerdictOfAnything {
    /// No verdict.
    fn verdict_of(&self) -> Option<String>;
}

impl<T> VerdictOfAnything for &VerdictProbe<'_, T> {
    fn verdict_of(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{EvidenceList, OpenQuestions, StopConditions};

    fn said(branch: &'static str, verdict: &str, seq: u32) -> BranchVerdict {
        BranchVerdict {
            record: Some(Citation::record(seq, format!("d{seq}"))),
            ..BranchVerdict::new(branch, verdict)
        }
    }

    fn dissent() -> Disagreement {
        Disagreement::among(
            0,
            vec![said("security", "block", 4), said("style", "approve", 5)],
        )
        .expect("they differ")
    }

    /// Whether a contract with these open questions and this evidence
    /// carries the dissent.
    fn carried(open: Vec<Uncertainty>, evidence: Vec<Evidence>) -> bool {
        let stop = crate::spec::StopWhen::at_hop(9);
        let view = ContractView {
            parts: &[],
            authority: "Merge",
            expires: crate::spec::Expiry::Never,
            stop: &stop as &dyn StopConditions,
            open: &open as &dyn OpenQuestions,
            evidence: &evidence as &dyn EvidenceList,
            max_bytes: None,
            max_tokens: None,
            unbounded_stop: false,
            uncited_evidence: false,
            open_ended: false,
        };
        dissent().carried_by(Some(&view))
    }

    #[test]
    fn agreeing_or_absent_verdicts_are_no_disagreement() {
        assert_eq!(Disagreement::among(0, vec![]), None);
        let same = vec![said("a", "approve", 1), said("b", "approve", 2)];
        assert_eq!(Disagreement::among(0, same), None);
    }

    #[test]
    fn the_question_names_every_branch_and_its_verdict() {
        assert_eq!(
            dissent().question(),
            r#"the branches disagree: security says "block", style says "approve""#
        );
    }

    #[test]
    fn an_open_question_naming_all_or_evidence_citing_all_carries_it() {
        let d = dissent();
        assert!(carried(vec![d.uncertainty("a person decides")], vec![]));
        assert!(carried(vec![], vec![d.resolution("judge", "a block wins")]));
        // A question that leaves a branch out, evidence that leaves a
        // record out or cites another: dropped.
        let partial = Uncertainty::new("security says block", "?");
        assert!(!carried(vec![partial], vec![]));
        let mut one = d.resolution("judge", "a block wins");
        one.cites.pop();
        assert!(!carried(vec![], vec![one.clone()]));
        one.cites.push(Citation::record(5, "another digest"));
        assert!(!carried(vec![], vec![one]));
        assert!(!carried(vec![], vec![]));
        assert!(!d.carried_by(None));
    }

    #[test]
    fn a_verdict_is_a_string_as_it_is_or_json_text() {
        assert_eq!(verdict_text("block").as_deref(), Some("block"));
        assert_eq!(verdict_text(&true).as_deref(), Some("true"));
        assert_eq!(verdict_text(&3u8).as_deref(), Some("3"));
        assert_eq!(verdict_text(&None::<bool>), None);
    }
}
