//! Invariant 10: misuse of the engine API is refused and harmless.

use arbor_engine::scheduler::{Outcome, Scheduler, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::EngineError;
use arbor_proptests::driver;
use arbor_proptests::gen::{self, SMALL};
use arbor_proptests::{run, scheduler, show};
use proptest::prelude::*;

/// A bad call, aimed at a request picked by index among those in the
/// right state (or past the last id).
#[derive(Debug, Clone, Copy)]
enum Bad {
    /// `handle_sent` / `handle_completion` on an id that does not exist.
    UnknownSent(u64),
    UnknownCompletion(u64),
    /// `handle_completion` on a request already completed.
    DoubleCompletion(usize),
    /// `handle_sent` on a request already sent (in flight or completed).
    DoubleSent(usize),
    /// `handle_sent` / `handle_completion` before the request was
    /// dispatched (blocked, waiting on a timer or queued).
    SentBeforeDispatch(usize),
    CompletionBeforeDispatch(usize),
    /// `handle_timeout` at a time before the last event.
    TimeBackwards(Nanos),
}

fn bad() -> impl Strategy<Value = Bad> {
    prop_oneof![
        (0u64..5).prop_map(Bad::UnknownSent),
        (0u64..5).prop_map(Bad::UnknownCompletion),
        any::<usize>().prop_map(Bad::DoubleCompletion),
        any::<usize>().prop_map(Bad::DoubleSent),
        any::<usize>().prop_map(Bad::SentBeforeDispatch),
        any::<usize>().prop_map(Bad::CompletionBeforeDispatch),
        (1u64..3_000_000).prop_map(Bad::TimeBackwards),
    ]
}

fn pick(s: &Scheduler, i: usize, want: &[TurnState]) -> Option<u64> {
    let ids: Vec<u64> = (0..s.slots().len() as u64)
        .filter(|&id| want.contains(&s.slot(id).unwrap().state))
        .collect();
    (!ids.is_empty()).then(|| ids[i % ids.len()])
}

/// Makes the bad call; returns what the engine answered (`None` when no
/// request was in the state aimed at).
fn misuse(s: &mut Scheduler, now: Nanos, bad: Bad) -> Option<(Bad, Result<(), EngineError>)> {
    use TurnState::*;
    let done = [Done, Failed, Cancelled];
    let result = match bad {
        Bad::UnknownSent(k) => s.handle_sent(now, s.slots().len() as u64 + k),
        Bad::UnknownCompletion(k) => {
            s.handle_completion(now, s.slots().len() as u64 + k, Outcome::Ok)
        }
        Bad::DoubleCompletion(i) => {
            let id = pick(s, i, &done)?;
            s.handle_completion(now, id, Outcome::Ok)
        }
        Bad::DoubleSent(i) => {
            let id = pick(s, i, &[Sent, Done, Failed, Cancelled])?;
            s.handle_sent(now, id)
        }
        Bad::SentBeforeDispatch(i) => {
            let id = pick(s, i, &[Blocked, Timer, Queued])?;
            s.handle_sent(now, id)
        }
        Bad::CompletionBeforeDispatch(i) => {
            let id = pick(s, i, &[Blocked, Timer, Queued])?;
            s.handle_completion(now, id, Outcome::Failed)
        }
        Bad::TimeBackwards(d) if now >= d => s.handle_timeout(now - d),
        Bad::TimeBackwards(_) => return None,
    };
    Some((bad, result))
}

proptest! {
    #![proptest_config(arbor_proptests::config(1000, "api"))]

    /// **Misuse is refused and changes nothing.** Unknown ids, double
    /// sends, double completions, sends or completions before dispatch,
    /// and time going backwards, interleaved anywhere in a valid run, each
    /// return an error; the run then finishes exactly as the same run
    /// without them (same timeline, byte for byte).
    #[test]
    fn misuse_is_refused_and_leaves_the_run_unchanged(
        w in gen::any_workload(SMALL),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
        calls in prop::collection::vec((0usize..60, bad()), 1..12),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (clean, _) = run(&w, &p, &svc);
        let mut s = scheduler(&w, &p);
        let mut answers = Vec::new();
        let mut hook = |s: &mut Scheduler, now: Nanos, step: usize| {
            for &(at, bad) in &calls {
                if at == step {
                    if let Some(answer) = misuse(s, now, bad) {
                        answers.push(answer);
                    }
                }
            }
        };
        let service = |r: &driver::Request| svc.time(r);
        driver::run(&mut s, &service, &mut hook);
        for (bad, answer) in &answers {
            prop_assert!(answer.is_err(), "{:?} was accepted{}", bad, ctx);
        }
        prop_assert_eq!(show::timeline(&s), show::timeline(&clean), "bad calls {:?} changed the run{}", answers, ctx);
    }
}
