//! The virtual-clock driver: the scheduler plus a service model, no I/O.
//!
//! Owns the loop that turns dispatch commands into completions at
//! `now + service_time` and jumps the clock to the next event. Order at
//! equal times: completions first (in request-id order), then timers, as the
//! scheduler's documentation requires.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use arbor_engine::scheduler::{Command, Outcome, RequestId, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::EngineError;
use arbor_sim::{ServiceModel, ServiceRequest};

/// Runs the scheduler to the end with `model` deciding service times.
/// Returns the final virtual time.
pub fn run(scheduler: &mut Scheduler, model: &ServiceModel) -> Result<Nanos, EngineError> {
    let mut completions: BinaryHeap<Reverse<(Nanos, RequestId)>> = BinaryHeap::new();
    let mut now: Nanos = 0;
    loop {
        while let Some(command) = scheduler.poll_command() {
            match command {
                Command::Dispatch(id) => {
                    scheduler.handle_sent(now, id)?;
                    let (tree, _, turn) = scheduler
                        .request_tree(id)
                        .ok_or(EngineError::UnknownRequest(id))?;
                    let t = turn as usize;
                    // A warmup asks for one token: prefill only (the
                    // recorded model has no prefill time to give: 0).
                    let warmup = scheduler.slot(id).is_some_and(|s| s.warmup);
                    let request = ServiceRequest {
                        isl: tree.isl[t],
                        osl: if warmup { 1 } else { tree.osl[t] },
                        recorded: if warmup { 0 } else { tree.duration[t] },
                    };
                    completions.push(Reverse((
                        now.saturating_add(model.service_time(&request)),
                        id,
                    )));
                }
                Command::Cancel(id) => {
                    // The scheduler only cancels what is in flight; the
                    // heap entry becomes stale and is skipped below.
                    scheduler.handle_completion(now, id, Outcome::Cancelled)?;
                }
            }
        }
        let next_completion = completions.peek().map(|Reverse((at, _))| *at);
        let next_timer = scheduler.poll_timeout();
        let completion_first = match (next_completion, next_timer) {
            (None, None) => break,
            (Some(at), Some(t)) => at <= t,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if completion_first {
            let Some(Reverse((at, id))) = completions.pop() else {
                break;
            };
            let in_flight = scheduler
                .slot(id)
                .is_some_and(|s| s.state == TurnState::Sent);
            if in_flight {
                now = now.max(at);
                scheduler.handle_completion(now, id, Outcome::Ok)?;
            }
        } else if let Some(t) = next_timer {
            now = now.max(t);
            scheduler.handle_timeout(now)?;
        }
    }
    Ok(now)
}
