//! Invariant 9: the engine agrees with the reference scheduler
//! (`arbor_proptests::oracle`) on small workloads; and a run is the calls
//! the driver made (replaying its trace reproduces it).

use arbor_engine::scheduler::{Command, Scheduler};
use arbor_proptests::driver::Call;
use arbor_proptests::gen::{self, SMALL};
use arbor_proptests::oracle::{self, Timeline};
use arbor_proptests::{run, scheduler, show};
use proptest::prelude::*;

/// The engine's timeline in the oracle's terms.
fn engine_timeline(s: &Scheduler) -> Timeline {
    Timeline {
        slots: s
            .slots()
            .iter()
            .map(|x| oracle::Slot {
                play: x.play,
                turn: x.turn,
                eligible: x.eligible,
                sent: x.sent,
                end: x.end,
            })
            .collect(),
        plays: s
            .plays()
            .iter()
            .map(|p| oracle::Play {
                tree: p.tree,
                copy: p.copy,
                lane: p.lane,
                started: p.started,
                done: p.done,
            })
            .collect(),
        idle_shifts: s.stats().idle_shifts,
        idle_skipped: s.stats().idle_skipped,
    }
}

fn diff(a: &Timeline, b: &Timeline) -> String {
    let mut out = String::new();
    for (i, (x, y)) in a.slots.iter().zip(&b.slots).enumerate() {
        let mark = if x == y { " " } else { "!" };
        out += &format!(
            "{mark} r{i} p{} t{}: engine {}/{}/{} oracle {}/{}/{}\n",
            x.play, x.turn, x.eligible, x.sent, x.end, y.eligible, y.sent, y.end
        );
    }
    for (i, (x, y)) in a.plays.iter().zip(&b.plays).enumerate() {
        if x != y {
            out += &format!("! play{i}: engine {x:?} oracle {y:?}\n");
        }
    }
    out += &format!(
        "slots {} vs {}, plays {} vs {}, shifts {}/{} vs {}/{}\n",
        a.slots.len(),
        b.slots.len(),
        a.plays.len(),
        b.plays.len(),
        a.idle_shifts,
        a.idle_skipped,
        b.idle_shifts,
        b.idle_skipped
    );
    out
}

proptest! {
    #![proptest_config(arbor_proptests::config(2000, "oracle"))]

    /// **The engine does what a naive reading of the contract does.** On
    /// small workloads (derived or stated edges), under every arrival kind,
    /// copies and stagger, gap transforms, `--max-inflight`,
    /// `--idle-gap-cap` and `--sessions`, with any service model, the
    /// engine's per-turn (eligible, sent, end), its plays (tree, copy,
    /// lane, start, done) and its idle-shift counters equal those of the
    /// deliberately simple reference scheduler.
    #[test]
    fn engine_agrees_with_the_reference_scheduler(
        w in gen::any_workload(SMALL),
        p in gen::policy(),
        svc in gen::service(),
    ) {
        let (s, _) = run(&w, &p, &svc);
        let expected = oracle::run(&w, &p, &|r| svc.time(r)).expect("supported policy");
        let got = engine_timeline(&s);
        prop_assert!(got == expected, "engine and oracle differ:\n{}{}", diff(&got, &expected), show::case(&w, &p, &svc));
    }

    /// **A run is the calls it received, and the trace holds them all.**
    /// Feeding the calls of a run's trace, in order, to a fresh scheduler
    /// (draining its commands after each, as the loop does) gives the same
    /// dispatch and cancel commands and the same timeline, byte for byte.
    /// So the engine's state is a function of the calls alone, and the
    /// driver's call hook misses none: what the properties check on
    /// traces is what happened.
    #[test]
    fn replaying_the_trace_reproduces_the_run(
        w in gen::any_workload(SMALL),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (ran, trace) = run(&w, &p, &svc);
        let mut s = scheduler(&w, &p);
        let (mut dispatched, mut cancelled) = (Vec::new(), Vec::new());
        for &call in &trace.calls {
            let answer = match call {
                Call::Timeout(t) => s.handle_timeout(t),
                Call::Sent(t, id) => s.handle_sent(t, id),
                Call::Completion(t, id, outcome) => s.handle_completion(t, id, outcome),
            };
            prop_assert!(answer.is_ok(), "{:?} refused on replay: {:?}{}", call, answer, ctx);
            while let Some(command) = s.poll_command() {
                match command {
                    Command::Dispatch(id) => dispatched.push(id),
                    Command::Cancel(id) => cancelled.push(id),
                }
            }
        }
        prop_assert_eq!(&dispatched, &trace.dispatched, "dispatches differ{}", ctx);
        prop_assert_eq!(&cancelled, &trace.cancelled, "cancels differ{}", ctx);
        prop_assert_eq!(show::timeline(&s), show::timeline(&ran), "{}", ctx);
    }
}
