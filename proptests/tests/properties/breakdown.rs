//! Where the time goes (issue 11, item 8): the makespan's breakdown into
//! classes (`arbor_engine::breakdown`) accounts for every nanosecond, on
//! generated workloads under every policy and on every fixture trace.

use arbor_engine::breakdown::{breakdown, Breakdown, TimeClass};
use arbor_engine::policy::{GapScale, GapTransform, Policy};
use arbor_engine::scheduler::Scheduler;
use arbor_proptests::gen::{self, MEDIUM};
use arbor_proptests::{fixtures, plan, run, show};
use arbor_sim::ServiceModel;
use proptest::prelude::*;

/// The classes sum to the makespan (the last completion); only the idle
/// caps' class is negative; `Err` says what broke.
fn accounts_for_the_makespan(s: &Scheduler, b: &Breakdown) -> Result<(), String> {
    let last = s
        .slots()
        .iter()
        .filter(|x| {
            matches!(
                x.state,
                arbor_engine::scheduler::TurnState::Done
                    | arbor_engine::scheduler::TurnState::Failed
                    | arbor_engine::scheduler::TurnState::Cancelled
            )
        })
        .map(|x| x.end)
        .max()
        .unwrap_or(0);
    if b.makespan != last {
        return Err(format!(
            "makespan {} but last completion {last}",
            b.makespan
        ));
    }
    if b.total() != b.makespan as i64 {
        return Err(format!(
            "classes sum to {} for {}: {b:?}",
            b.total(),
            b.makespan
        ));
    }
    for (class, ns) in b.iter() {
        let negative_allowed = class == TimeClass::IdleSkipped;
        if (ns < 0 && !negative_allowed) || (ns > 0 && negative_allowed) {
            return Err(format!("{} is {ns} ns: {b:?}", class.as_str()));
        }
    }
    Ok(())
}

/// The policy with the gap flags of issue 11 set.
fn with_gap_flags(
    p: Policy,
    (other_time, spawn_time, join_time, scale): (GapTransform, GapTransform, GapTransform, u64),
) -> Policy {
    Policy {
        other_time,
        spawn_time,
        join_time,
        gap_scale: GapScale {
            ppm: scale * 250_000,
        },
        ..p
    }
}

fn gap_flags() -> impl Strategy<Value = (GapTransform, GapTransform, GapTransform, u64)> {
    (
        gen::gap_transform(),
        gen::gap_transform(),
        gen::gap_transform(),
        0u64..8,
    )
}

proptest! {
    #![proptest_config(arbor_proptests::config(200, "breakdown"))]

    /// **Every nanosecond of the makespan has a class.** Walking the
    /// critical path back from the last completion, the classes (service,
    /// queue, the gap classes, arrival, and the idle caps' skipped time,
    /// the only negative one) sum to the makespan exactly, whatever the
    /// policy (open or closed loop, caps, duration, the gap flags) and the
    /// service times.
    #[test]
    fn the_classes_sum_to_the_makespan(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        flags in gap_flags(),
        svc in gen::service(),
    ) {
        let p = with_gap_flags(p, flags);
        let ctx = show::case(&w, &p, &svc);
        let (s, _) = run(&w, &p, &svc);
        let b = breakdown(&s);
        if let Err(e) = accounts_for_the_makespan(&s, &b) {
            prop_assert!(false, "{}\n{}{}", e, show::short(&s), ctx);
        }
    }

    /// **`--gap-scale 0` leaves no gap.** With every gap scaled to 0, no
    /// time is classed tool, think, other, spawn, join or concurrent.
    #[test]
    fn gap_scale_zero_leaves_no_gap_time(
        w in gen::any_workload(MEDIUM),
        p in gen::policy(),
        svc in gen::service(),
    ) {
        let p = Policy { gap_scale: GapScale { ppm: 0 }, ..p };
        let ctx = show::case(&w, &p, &svc);
        let (s, _) = run(&w, &p, &svc);
        let b = breakdown(&s);
        for (class, ns) in b.iter() {
            if let TimeClass::Gap(_) = class {
                prop_assert_eq!(ns, 0, "{}: {:?}{}", class.as_str(), b, ctx);
            }
        }
        prop_assert_eq!(b.total(), b.makespan as i64);
    }
}

/// The breakdown of every fixture trace, as recorded and with every gap
/// flag at its most drastic, accounts for its makespan.
#[test]
fn every_fixture_accounts_for_its_makespan() {
    let drastic = Policy {
        tool_time: GapTransform::Zero,
        think_time: GapTransform::Zero,
        gap_scale: GapScale { ppm: 0 },
        ..Policy::default()
    };
    let mut checked = 0;
    for (file, w) in fixtures() {
        for policy in [Policy::default(), drastic.clone()] {
            let s = plan(&w, policy, &ServiceModel::Recorded);
            let b = breakdown(&s);
            if let Err(e) = accounts_for_the_makespan(&s, &b) {
                panic!("{}: {e}", file.display());
            }
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} fixtures found");
}
