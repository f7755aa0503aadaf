//! Invariant 8: determinism.

use std::collections::BTreeSet;

use arbor_engine::policy::{Arrival, Policy, Stagger};
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{driver, run, scheduler, show};
use proptest::prelude::*;

/// True when the seed decides something in this policy: poisson arrivals,
/// random stagger, or which trees each lane plays.
fn seeded(p: &Policy) -> bool {
    matches!(p.arrival, Arrival::Poisson(_))
        || matches!(p.stagger, Stagger::Random { span } if span > 0 && p.copies > 1)
        || p.sessions.is_some()
}

proptest! {
    #![proptest_config(arbor_proptests::config(600, "determinism"))]

    /// **Same inputs, same seed: same plan, byte for byte.** Two runs of
    /// the same workload, policy, seed and service model produce identical
    /// timelines (every request's times and shifts, every play and lane,
    /// every counter).
    #[test]
    fn same_inputs_and_seed_give_the_same_timeline(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let (a, ta) = run(&w, &p, &svc);
        let (b, tb) = run(&w, &p, &svc);
        prop_assert_eq!(show::timeline(&a), show::timeline(&b), "{}", show::case(&w, &p, &svc));
        prop_assert_eq!(ta, tb);
    }

    /// **The seed changes only what it is documented to change.** When no
    /// seeded choice is in play (no poisson arrival, no random stagger, no
    /// lanes), changing the seed changes nothing at all. When one is, the
    /// same plays still happen (every tree, every copy), copy 0 of each
    /// tree still arrives where it would without stagger, and the first
    /// poisson arrival is still at 0.
    #[test]
    fn the_seed_changes_only_seeded_choices(
        w in gen::any_workload(MEDIUM),
        p in gen::policy(),
        other in any::<u64>(),
        svc in gen::service(),
    ) {
        let q = Policy { seed: other, ..p.clone() };
        let ctx = show::case(&w, &p, &svc);
        let (a, _) = run(&w, &p, &svc);
        let (b, _) = run(&w, &q, &svc);
        if !seeded(&p) {
            prop_assert_eq!(show::timeline(&a), show::timeline(&b), "seed {} vs {}{}", p.seed, other, ctx);
        } else {
            let plays = |s: &arbor_engine::scheduler::Scheduler| {
                s.plays().iter().map(|p| (p.tree, p.copy)).collect::<BTreeSet<_>>()
            };
            prop_assert_eq!(plays(&a), plays(&b));
            prop_assert_eq!(a.slots().len(), b.slots().len());
            if p.sessions.is_none() {
                let copy0 = |s: &arbor_engine::scheduler::Scheduler| {
                    s.plays().iter().filter(|p| p.copy == 0).map(|p| p.planned).collect::<Vec<_>>()
                };
                if !matches!(p.arrival, Arrival::Poisson(_)) {
                    prop_assert_eq!(copy0(&a), copy0(&b), "{}", ctx);
                } else {
                    prop_assert_eq!(a.plays()[0].planned, b.plays()[0].planned);
                }
            }
        }
    }

    /// **Forgetting finished plays changes no decision.** A scheduler that
    /// forgets finished plays and their slots as early as it may (the live
    /// driver's mode, batches of one) makes the same calls at the same
    /// times with the same ids as one that keeps everything, ends with the
    /// same counters and lanes, and what it still holds is the tail of the
    /// other's history, open and closed loops, with and without `--loop`.
    #[test]
    fn forgetting_finished_plays_changes_no_decision(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy(), gen::looping_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (kept, kept_trace) = run(&w, &p, &svc);
        let mut s = scheduler(&w, &p);
        s.forget_finished(1);
        let trace = driver::run(&mut s, &|r| svc.time(r), &mut driver::no_hook);
        prop_assert_eq!(&kept_trace, &trace, "{}", ctx);
        prop_assert_eq!(kept.stats(), s.stats(), "{}", ctx);
        prop_assert_eq!(format!("{:?}", kept.lanes()), format!("{:?}", s.lanes()));
        let (request, play) = (s.first_request() as usize, s.first_play() as usize);
        prop_assert_eq!(format!("{:?}", &kept.slots()[request..]), format!("{:?}", s.slots()), "{}", ctx);
        prop_assert_eq!(format!("{:?}", &kept.plays()[play..]), format!("{:?}", s.plays()), "{}", ctx);
    }
}
