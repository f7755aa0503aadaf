//! Prefix reuse of a finished plan: the best possible reuse of every
//! request and, when the plan ran the batching server model, its
//! prediction (`arbor_backends::reuse`), computed before a live run's
//! clock starts (`run::prepare`) and totalled for `arbor plan`.

use arbor_backends::reuse::{ReusePlan, ReuseTotals, TooLarge};
use arbor_backends::virtual_clock::Prompts;
use arbor_engine::scheduler::Scheduler;
use arbor_report::plan::server::ServerPrediction;
use arbor_report::plan::PlanReuse;

/// The figures of every request `scheduler` (run to its end) sent, with
/// `server`'s predicted cached tokens when the plan has them; a plan too
/// large to key is not ([`TooLarge`]: the caller says so).
pub fn plan(
    scheduler: &Scheduler,
    prompts: Prompts<'_>,
    server: Option<&ServerPrediction>,
) -> Result<ReusePlan, TooLarge> {
    let first = scheduler.first_request();
    let predicted = server.map(|s| {
        let mut by_id = vec![None; scheduler.slots().len()];
        for t in &s.turns {
            let at = t
                .request
                .checked_sub(first)
                .and_then(|i| usize::try_from(i).ok());
            if let Some(cached) = at.and_then(|i| by_id.get_mut(i)) {
                *cached = Some(t.cached_tokens);
            }
        }
        by_id
    });
    ReusePlan::of(
        scheduler,
        prompts.workload,
        prompts.cache_bust,
        predicted.as_deref(),
    )
}

/// The totals `arbor plan` reports.
pub fn totals(plan: &ReusePlan) -> PlanReuse {
    let ReuseTotals {
        requests,
        prompt_tokens,
        best_tokens,
        predicted_tokens,
    } = plan.totals();
    PlanReuse {
        requests,
        prompt_tokens,
        best_tokens,
        predicted_tokens,
    }
}
