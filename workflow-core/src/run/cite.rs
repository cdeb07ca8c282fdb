//! Cited evidence from an agent's turn: the citation of a tool call the
//! turn made, taken from the turn's record so that no id or digest is ever
//! copied by hand.

use std::borrow::Cow;

use crate::run::Context;
use crate::spec::{Citation, Evidence, Reject, Tool, ToolOutcome, Workflow};

impl<W: Workflow, A> Context<'_, W, A> {
    /// The citation of this turn's last successful call of `tool`: its turn,
    /// its index and the digest of its result as recorded. An error when
    /// the turn has made no successful call of it (there is nothing to
    /// cite: the agent must not claim the tool's word).
    ///
    /// ```ignore
    /// let status = cx.call(tools::status_page, ()).await?;
    /// let evidence = Evidence::partial("status_page", "one incident open")
    ///     .citing(cx.citation(tools::status_page)?);
    /// ```
    pub fn citation<T: Tool<W>>(&self, tool: T) -> Result<Citation, Reject> {
        let _ = tool;
        let log = self.run.shared().lock();
        log.calls
            .iter()
            .filter(|c| c.tool == T::NAME)
            .max_by_key(|c| c.index)
            .and_then(|c| match &c.outcome {
                ToolOutcome::Ok { digest, .. } => Some(Citation::ToolCall {
                    tool: Cow::Borrowed(T::NAME),
                    turn: self.run.turn().turn_seq,
                    index: c.index,
                    digest: digest.clone(),
                }),
                ToolOutcome::Failed { .. } => None,
            })
            .ok_or_else(|| {
                Reject::because(format!(
                    "evidence cites tool `{}`, but the last call of it in this turn did not succeed or was never made",
                    T::NAME
                ))
            })
    }

    /// Complete evidence from this turn's last successful call of `tool`:
    /// its source is the tool, and it cites the call
    /// ([`citation`](Self::citation)). For a partial result, write
    /// `Evidence::partial(..).citing(cx.citation(tool)?)`.
    pub fn evidence_from<T: Tool<W>>(
        &self,
        tool: T,
        claim: impl Into<Cow<'static, str>>,
    ) -> Result<Evidence, Reject> {
        Ok(Evidence::complete(T::NAME, claim).citing(self.citation(tool)?))
    }

    /// `evidence` with each uncited item whose `source` names a tool cited
    /// to this turn's last successful call of that tool: for evidence a
    /// model wrote (`cx.generate`), which names its sources but cannot know
    /// a call's digest. An item naming a tool the turn did not call
    /// successfully stays uncited, and the receipt rejects it
    /// (`uncited_evidence`); items with citations are left as they are.
    pub fn cite_calls(&self, evidence: impl IntoIterator<Item = Evidence>) -> Vec<Evidence> {
        let log = self.run.shared().lock();
        evidence
            .into_iter()
            .map(|item| {
                if !item.cites.is_empty() {
                    return item;
                }
                let last = log
                    .calls
                    .iter()
                    .filter(|c| c.tool == item.source)
                    .max_by_key(|c| c.index);
                match last.map(|c| (c, &c.outcome)) {
                    Some((call, ToolOutcome::Ok { digest, .. })) => {
                        let citation = Citation::ToolCall {
                            tool: call.tool.clone(),
                            turn: self.run.turn().turn_seq,
                            index: call.index,
                            digest: digest.clone(),
                        };
                        item.citing(citation)
                    }
                    _ => item,
                }
            })
            .collect()
    }
}
