//! A turn's body under its time limit, as one future whatever the limit
//! ([`Runtime::limited_turn`](crate::Runtime::limited_turn)).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::coop;

/// A future (`body`, pinned where it is awaited) raced against a timer, if
/// there is one: its output, or `None` once the timer fired first.
///
/// One type for a turn with a limit and one without, so that a turn's body
/// is polled from one place (where the compiler can build its result in
/// place); the timer is boxed, so a turn without a limit neither carries
/// nor moves the timer's state.
#[doc(hidden)] // for generated turns; by hand, `Runtime::turn` does it all
#[derive(Debug)]
#[must_use = "a turn does nothing unless awaited"]
pub struct Limited<F> {
    body: F,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<F> Limited<F> {
    /// `body` raced against a timer of `limit` started now (none: `body`
    /// alone). A limit needs a tokio runtime with its time driver.
    #[inline(always)]
    pub(crate) fn new(body: F, limit: Option<std::time::Duration>) -> Self {
        Limited {
            body,
            timer: limit.map(|limit| Box::pin(tokio::time::sleep(limit))),
        }
    }
}

// The timer dropped by a call, only when there is one: the drop of a
// turn's `Limited` is then a test, not a call (measured: about 8
// instructions a transition).
impl<F> Drop for Limited<F> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            drop_timer(timer);
        }
    }
}

/// Drops a turn's timer (cancels it with the time driver).
#[inline(never)]
fn drop_timer(timer: Pin<Box<tokio::time::Sleep>>) {
    drop(timer);
}

impl<F: Future + Unpin> Future for Limited<F> {
    type Output = Option<F::Output>;

    // As `tokio::time::timeout` polls: the body first (a body that finishes
    // in the poll where its limit passes keeps its result), then the timer;
    // unconstrained by the task's budget if the body spent it, so that a
    // body that spends it on every poll is still cut.
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let had_budget = this.timer.is_some() && coop::has_budget_remaining();
        if let Poll::Ready(out) = Pin::new(&mut this.body).poll(cx) {
            return Poll::Ready(Some(out));
        }
        let Some(timer) = this.timer.as_mut() else {
            return Poll::Pending;
        };
        let fired = if had_budget && !coop::has_budget_remaining() {
            Pin::new(&mut coop::unconstrained(timer.as_mut())).poll(cx)
        } else {
            timer.as_mut().poll(cx)
        };
        fired.map(|()| None)
    }
}

#[cfg(test)]
mod tests {
    use super::Limited;
    use std::time::Duration;

    #[tokio::test]
    async fn a_body_done_in_time_gives_its_result() {
        let body = std::pin::pin!(async { 7 });
        let limited = Limited::new(body, Some(Duration::from_secs(60)));
        assert_eq!(limited.await, Some(7));
        let body = std::pin::pin!(async { 8 });
        assert_eq!(Limited::new(body, None).await, Some(8));
    }

    #[tokio::test]
    async fn a_body_past_its_limit_is_cut() {
        let body = std::pin::pin!(std::future::pending::<u8>());
        let limited = Limited::new(body, Some(Duration::from_millis(20)));
        let cut = tokio::time::timeout(Duration::from_secs(10), limited).await;
        assert_eq!(cut, Ok(None), "cut at its limit, well before 10 s");
    }

    /// A body that spends the task's whole budget on every poll (a loop
    /// over a busy channel, say) is still cut at its limit: the timer is
    /// then polled unconstrained, as `tokio::time::timeout` polls it.
    #[tokio::test]
    async fn a_body_that_spends_the_tasks_budget_is_still_cut() {
        let body = std::pin::pin!(async {
            loop {
                tokio::task::coop::consume_budget().await;
            }
        });
        let limited = Limited::new(body, Some(Duration::from_millis(20)));
        let cut = tokio::time::timeout(Duration::from_secs(10), limited).await;
        assert!(
            matches!(cut, Ok(None)),
            "cut at its limit, well before 10 s"
        );
    }
}
