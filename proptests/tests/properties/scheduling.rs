//! The scheduling invariants (1, 2, 4, 5, 6, 7 of issue 5), on generated
//! workloads, policies and service models. Every failure message carries
//! the workload in the compact form of `arbor_proptests::show`.

use std::collections::BTreeSet;

use arbor_engine::model::Anchor;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::{Scheduler, Slot, TurnState};
use arbor_engine::time::Nanos;
use arbor_engine::Workload;
use arbor_proptests::driver::{self, Call};
use arbor_proptests::gen::{self, MEDIUM, SMALL};
use arbor_proptests::{background_turns, run, scheduler, show};
use proptest::prelude::*;

fn finished(state: TurnState) -> bool {
    matches!(
        state,
        TurnState::Done | TurnState::Failed | TurnState::Cancelled
    )
}

/// The slot of turn `turn` of play `play`.
fn slot(s: &Scheduler, play: usize, turn: u32) -> &Slot {
    let id = s.plays()[play].request(turn).expect("started play");
    s.slot(id).expect("slot")
}

proptest! {
    #![proptest_config(arbor_proptests::config(1000, "scheduling"))]

    /// **Nothing is lost or duplicated.** Every turn of every play is sent
    /// exactly once, or, when `--duration` ends the run first, recorded as
    /// skipped (never sent) or cancelled (sent, cut at the grace); every
    /// play either starts or is counted as not started. Without a
    /// duration, every turn of every tree completes, `--copies` times.
    #[test]
    fn every_turn_is_sent_once_or_accounted_for(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (s, trace) = run(&w, &p, &svc);
        prop_assert!(!trace.livelock, "livelock{ctx}");
        let unique: BTreeSet<_> = trace.dispatched.iter().copied().collect();
        prop_assert_eq!(unique.len(), trace.dispatched.len(), "a request was dispatched twice{}", ctx);
        for (id, x) in s.slots().iter().enumerate() {
            let sent = unique.contains(&(id as u64));
            prop_assert!(
                (sent && finished(x.state)) || (!sent && x.state == TurnState::Skipped),
                "r{} ended {:?} (dispatched: {}){}", id, x.state, sent, ctx
            );
            if x.state == TurnState::Cancelled {
                prop_assert!(trace.cancelled.contains(&(id as u64)));
            }
        }
        // Each started play owns a contiguous block of slots, one per turn.
        let mut covered = 0;
        for (i, play) in s.plays().iter().enumerate() {
            if play.started.is_none() { continue; }
            let n = s.trees()[play.tree as usize].turn_count();
            for t in 0..n {
                let x = slot(&s, i, t);
                prop_assert_eq!((x.play as usize, x.turn), (i, t));
            }
            covered += n as usize;
        }
        prop_assert_eq!(covered, s.slots().len());
        let st = s.stats();
        prop_assert_eq!(st.dispatched as usize, trace.dispatched.len());
        prop_assert_eq!(st.skipped as usize, s.slots().iter().filter(|x| x.state == TurnState::Skipped).count());
        prop_assert_eq!(st.cancelled as usize, trace.cancelled.len());
        let corpus = w.trees.len() * p.copies as usize;
        if p.duration.is_none() {
            prop_assert!(s.slots().iter().all(|x| x.state == TurnState::Done), "not all done{}", ctx);
            prop_assert_eq!(s.slots().len(), w.turn_count() * p.copies as usize);
            // Every (tree, copy) played exactly once.
            let played: BTreeSet<_> = s.plays().iter().map(|p| (p.tree, p.copy)).collect();
            prop_assert_eq!(played.len(), corpus);
            prop_assert_eq!(s.plays().len(), corpus);
        } else if p.sessions.is_none() {
            prop_assert_eq!(s.plays().len(), corpus);
            prop_assert_eq!((st.plays_started + st.plays_not_started) as usize, corpus, "{}", ctx);
        }
    }

    /// **No turn goes early, none waits for nothing.** For every edge
    /// `p -> n` (derived or stated, gap transformed by the policy), `n`
    /// becomes eligible no earlier than `p`'s anchor (its end, or its send
    /// for a `Start` edge) plus the gap, minus only the idle-gap shift
    /// credited to `n` in between; it becomes eligible exactly at the
    /// latest such bound; and it is sent no earlier than it is eligible.
    #[test]
    fn no_turn_is_sent_before_it_is_eligible(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (s, _) = run(&w, &p, &svc);
        for (i, play) in s.plays().iter().enumerate() {
            if play.started.is_none() { continue; }
            let tree = &s.trees()[play.tree as usize];
            let n_turns = tree.turn_count();
            // Latest bound of each turn, in the unshifted time base.
            let mut bound: Vec<Option<i128>> = vec![None; n_turns as usize];
            for from in 0..n_turns {
                let a = slot(&s, i, from);
                for e in tree.out(from) {
                    let n = slot(&s, i, e.to);
                    if !finished(n.state) { continue; }
                    let (at, shift_at) = match e.anchor {
                        Anchor::End => {
                            prop_assert!(finished(a.state), "p{} t{} sent before its End predecessor t{} finished{}", i, e.to, from, ctx);
                            (a.end, a.shift_at_end)
                        }
                        Anchor::Start => {
                            prop_assert!(finished(a.state), "p{} t{} sent before its Start predecessor t{} was sent{}", i, e.to, from, ctx);
                            (a.sent, a.shift_at_sent)
                        }
                    };
                    let credited = n.shift_at_eligible - shift_at;
                    prop_assert!(
                        n.eligible + credited >= at + e.gap,
                        "p{} t{} eligible at {} but edge t{}->t{} ({:?}, gap {}) allows {} (shift credited {})\n{}{}",
                        i, e.to, n.eligible, from, e.to, e.anchor, e.gap, at + e.gap, credited, show::short(&s), ctx
                    );
                    let b = (at + e.gap + shift_at) as i128;
                    let slot_bound = &mut bound[e.to as usize];
                    *slot_bound = Some(slot_bound.map_or(b, |x| x.max(b)));
                }
            }
            for t in 0..n_turns {
                let n = slot(&s, i, t);
                if !finished(n.state) { continue; }
                prop_assert!(n.sent >= n.eligible && n.dispatched >= n.eligible, "p{} t{} sent before eligible{}", i, t, ctx);
                match bound[t as usize] {
                    Some(b) => {
                        let expect = (b - n.shift_at_eligible as i128).max(0);
                        prop_assert_eq!(n.eligible as i128, expect, "p{} t{} not eligible at its latest bound\n{}{}", i, t, show::short(&s), ctx);
                    }
                    None if p.idle_gap_cap.is_none() => {
                        let at = play.started.unwrap() + tree.start[t as usize];
                        prop_assert_eq!(n.eligible, at, "p{} source t{} not eligible at play start + offset{}", i, t, ctx);
                    }
                    None => {}
                }
            }
        }
    }

    /// **`--max-inflight M` is a hard cap.** Counted by the driver from the
    /// commands it receives, never more than M requests are in flight at
    /// once (and the engine's own peak agrees), whatever the workload and
    /// service times.
    #[test]
    fn request_cap_is_never_exceeded(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        cap in 1u32..5,
        svc in gen::service(),
    ) {
        let p = Policy { max_inflight: Some(cap), ..p };
        let ctx = show::case(&w, &p, &svc);
        let (s, trace) = run(&w, &p, &svc);
        prop_assert!(trace.max_inflight <= cap, "driver saw {} in flight{}", trace.max_inflight, ctx);
        prop_assert!(s.stats().peak_inflight <= cap, "engine peak {}{}", s.stats().peak_inflight, ctx);
    }

    /// **`--sessions N` is a closed loop you can trust.** Each lane runs
    /// one tree at a time; it is freed exactly when the whole tree is done
    /// (every turn, background children included) and starts its next tree
    /// at that instant; it plays exactly the trees the seed dealt to it, in
    /// order (cycling with `--loop`), and which trees those are does not
    /// depend on service times. Together the lanes' shares are the corpus
    /// (every tree, `--copies` times).
    #[test]
    fn lanes_run_one_whole_tree_at_a_time_as_dealt(
        w in gen::workload(MEDIUM),
        p in prop_oneof![gen::closed_policy(), gen::timed_policy().prop_filter("closed", |p| p.sessions.is_some())],
        svc in gen::service(),
        svc2 in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (s, trace) = run(&w, &p, &svc);
        prop_assert!(!trace.livelock, "livelock{}", ctx);
        // Only lanes that get a play exist.
        let n = (p.sessions.unwrap() as usize).min(w.trees.len() * p.copies as usize);
        prop_assert_eq!(s.lanes().len(), n);
        let mut corpus: Vec<(u32, u32)> = s.lanes().iter().flat_map(|l| l.share.iter().copied()).collect();
        corpus.sort_unstable();
        let expected: Vec<(u32, u32)> = (0..w.trees.len() as u32)
            .flat_map(|t| (0..p.copies).map(move |c| (t, c)))
            .collect();
        prop_assert_eq!(corpus, expected);
        for (l, lane) in s.lanes().iter().enumerate() {
            let plays: Vec<usize> = (0..s.plays().len()).filter(|&i| s.plays()[i].lane == Some(l as u32)).collect();
            prop_assert_eq!(plays.len(), lane.plays as usize);
            for (k, &i) in plays.iter().enumerate() {
                let play = &s.plays()[i];
                prop_assert_eq!((play.tree, play.copy), lane.share[k % lane.share.len()], "lane {} play {} out of its share{}", l, k, ctx);
                let started = play.started.expect("lane plays start");
                let done = play.done.expect("lane plays finish");
                let turns = s.trees()[play.tree as usize].turn_count();
                let mut last_end = started;
                for t in 0..turns {
                    let x = slot(&s, i, t);
                    if finished(x.state) { last_end = last_end.max(x.end); }
                }
                prop_assert!(done >= last_end, "lane {} freed at {} before its tree's last turn ended at {}\n{}{}", l, done, last_end, show::short(&s), ctx);
                if p.duration.is_none() {
                    prop_assert_eq!(done, last_end, "lane {} freed late{}", l, ctx);
                }
                if let Some(&next) = plays.get(k + 1) {
                    prop_assert_eq!(s.plays()[next].started, Some(done), "lane {} did not start its next tree when freed\n{}{}", l, show::short(&s), ctx);
                }
            }
            if p.duration.is_none() {
                prop_assert_eq!(plays.len(), lane.share.len(), "lane {} did not play its whole share{}", l, ctx);
            }
        }
        // The same seed deals the same trees to the same lanes, in the same
        // order, whatever the service times.
        if p.duration.is_none() {
            let (s2, _) = run(&w, &p, &svc2);
            let seq = |s: &Scheduler| s.plays().iter().map(|p| (p.lane, p.tree, p.copy)).collect::<BTreeSet<_>>();
            let shares = |s: &Scheduler| s.lanes().iter().map(|l| l.share.clone()).collect::<Vec<_>>();
            prop_assert_eq!(shares(&s), shares(&s2));
            prop_assert_eq!(seq(&s), seq(&s2));
        }
    }

    /// **`--idle-gap-cap S` bounds idle time.** Rebuilding busy periods from
    /// the timeline (a request is busy from dispatch to end; a queued turn
    /// implies a full cap, so it is covered), no stretch with nothing in
    /// flight lasts longer than S while work remains, including the start
    /// of the run.
    #[test]
    fn idle_gap_cap_bounds_idle_time(
        w in gen::any_workload(MEDIUM),
        p in gen::policy(),
        cap_ms in 0u64..4,
        svc in gen::service(),
    ) {
        let cap = cap_ms * 1_000_000;
        let p = Policy { idle_gap_cap: Some(cap), ..p };
        let ctx = show::case(&w, &p, &svc);
        let (s, _) = run(&w, &p, &svc);
        let mut busy: Vec<(Nanos, Nanos)> = s.slots().iter().map(|x| (x.dispatched, x.end)).collect();
        busy.sort_unstable();
        let mut idle_from: Nanos = 0;
        for (from, to) in busy {
            prop_assert!(
                from <= idle_from || from - idle_from <= cap,
                "idle from {} to {} (cap {})\n{}{}", idle_from, from, cap, show::short(&s), ctx
            );
            idle_from = idle_from.max(to);
        }
        prop_assert_eq!(s.stats().idle_skipped, s.shift());
    }

    /// **An idle shift is a pure translation.** Skipping idle time moves
    /// every pending timer (arrivals, gaps, partial constraints) earlier by
    /// the same amount, so order and spacing are kept: the run with
    /// `--idle-gap-cap` is the run without it, with each turn's eligible,
    /// sent and end times moved earlier by exactly the shift credited to it
    /// at that moment.
    #[test]
    fn idle_shift_is_a_translation(
        w in gen::any_workload(MEDIUM),
        p in gen::policy(),
        cap_ms in 0u64..4,
        svc in gen::service(),
    ) {
        let capped = Policy { idle_gap_cap: Some(cap_ms * 1_000_000), ..p.clone() };
        let free = Policy { idle_gap_cap: None, ..p };
        let ctx = show::case(&w, &capped, &svc);
        let (c, _) = run(&w, &capped, &svc);
        let (u, _) = run(&w, &free, &svc);
        prop_assert_eq!(c.slots().len(), u.slots().len());
        for (id, (a, b)) in c.slots().iter().zip(u.slots()).enumerate() {
            prop_assert_eq!((a.play, a.turn), (b.play, b.turn));
            prop_assert_eq!(
                (a.eligible + a.shift_at_eligible, a.sent + a.shift_at_sent, a.end + a.shift_at_end),
                (b.eligible, b.sent, b.end),
                "r{} differs from the uncapped run by more than its shift\ncapped:\n{}uncapped:\n{}{}",
                id, show::timeline(&c), show::short(&u), ctx
            );
        }
    }

    /// **A join turn waits for its blocking children.** For every blocking
    /// child that the recording shows rejoining its parent (the first
    /// parent turn starting at or after the child's end), the joining turn
    /// is sent only after the child's last-ending turn completed, and no
    /// earlier than the residual gap after it (transformed, minus the idle
    /// shift credited). Checked from the recording itself, not from the
    /// derived edges.
    #[test]
    fn join_turns_wait_for_blocking_children(
        w in gen::workload(MEDIUM),
        p in gen::policy(),
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (s, _) = run(&w, &p, &svc);
        for (i, play) in s.plays().iter().enumerate() {
            let tree = &w.trees[play.tree as usize];
            let offsets = tree.turn_offsets();
            for (a, agent) in tree.agents.iter().enumerate() {
                let (Some(parent), arbor_engine::AgentKind::Blocking) = (agent.parent, agent.kind) else { continue };
                let Some((c, last)) = agent.turns.iter().enumerate().max_by_key(|(i, t)| (t.end(), *i)) else { continue };
                let child_end = agent.recorded_end.unwrap_or(0).max(last.end());
                let parent_turns = &tree.agents[parent as usize].turns;
                let Some(j) = parent_turns.iter().position(|t| t.start >= child_end) else { continue };
                let gap = p.transform_gap(parent_turns[j].start - last.end(), parent_turns[j].input_kind);
                let cs = slot(&s, i, offsets[a] + c as u32);
                let js = slot(&s, i, offsets[parent as usize] + j as u32);
                prop_assert!(js.sent >= cs.end, "join a{} t{} sent at {} before child a{} ended at {}\n{}{}", parent, j, js.sent, a, cs.end, show::short(&s), ctx);
                let credited = js.shift_at_eligible - cs.shift_at_end;
                prop_assert!(
                    js.eligible + credited >= cs.end + gap,
                    "join a{} t{} eligible at {}, before child a{} end {} + residual gap {} (credited {})\n{}{}",
                    parent, j, js.eligible, a, cs.end, gap, credited, show::short(&s), ctx
                );
            }
        }
    }

    /// **A background child never blocks its parent.** Making every turn
    /// of background subagents (and their descendants) take a second
    /// longer changes nothing for the other turns: same eligible, sent and
    /// end times (open loop, no caps).
    #[test]
    fn background_children_never_block(
        w in gen::workload(MEDIUM),
        p in gen::open_policy(),
        svc in gen::service(),
    ) {
        let p = Policy { max_inflight: None, idle_gap_cap: None, ..p };
        let ctx = show::case(&w, &p, &svc);
        let bg = background_turns(&w);
        let (fast, _) = run(&w, &p, &svc);
        let mut sched = scheduler(&w, &p);
        let slow_service = |r: &driver::Request| {
            let extra = if bg[r.tree as usize][r.turn as usize] { 1_000_000_000 } else { 0 };
            svc.time(r) + extra
        };
        driver::run(&mut sched, &slow_service, &mut driver::no_hook);
        for (id, (a, b)) in fast.slots().iter().zip(sched.slots()).enumerate() {
            let tree = fast.plays()[a.play as usize].tree as usize;
            if bg[tree][a.turn as usize] { continue; }
            prop_assert_eq!(
                (a.eligible, a.sent, a.end), (b.eligible, b.sent, b.end),
                "r{} (p{} t{}) moved when background turns slowed down{}", id, a.play, a.turn, ctx
            );
        }
    }

    /// **Time never goes backwards and every run ends cleanly.** The
    /// driver's calls come with non-decreasing times; the run terminates
    /// (no livelock: bounded steps) with nothing in flight, no command and
    /// no timer pending, every turn in a final state, every started play
    /// done, and each request's times ordered eligible <= dispatched <=
    /// sent <= end.
    #[test]
    fn time_moves_forward_and_runs_terminate(
        w in gen::any_workload(MEDIUM),
        p in prop_oneof![gen::policy(), gen::timed_policy()],
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (mut s, trace) = run(&w, &p, &svc);
        prop_assert!(!trace.livelock, "no end after {} steps{}", driver::STEP_LIMIT, ctx);
        let times: Vec<Nanos> = trace.calls.iter().map(|c| c.time()).collect();
        prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "time went backwards{}", ctx);
        prop_assert!(trace.calls.iter().all(|c| !matches!(c, Call::Timeout(t) if *t > trace.end)));
        prop_assert!(s.is_finished(), "not finished{}", ctx);
        prop_assert_eq!(s.poll_timeout(), None);
        prop_assert_eq!(s.poll_command(), None);
        prop_assert_eq!(s.inflight(), 0);
        let st = *s.stats();
        prop_assert_eq!(st.dispatched, st.completed + st.failed + st.cancelled);
        for (id, x) in s.slots().iter().enumerate() {
            prop_assert!(finished(x.state) || x.state == TurnState::Skipped, "r{} left {:?}{}", id, x.state, ctx);
            if finished(x.state) {
                prop_assert!(x.eligible <= x.dispatched && x.dispatched <= x.sent && x.sent <= x.end, "r{} times out of order {:?}{}", id, x, ctx);
            }
        }
        for (i, play) in s.plays().iter().enumerate() {
            prop_assert_eq!(play.started.is_some(), play.done.is_some(), "play {} started but never done{}", i, ctx);
            if let (Some(a), Some(b)) = (play.started, play.done) { prop_assert!(a <= b); }
        }
    }

    /// **Looping lanes end at the deadline.** With `--sessions N --loop
    /// --duration S`, lanes cycle through their share, and the run still
    /// ends: time moves forward, nothing is lost (every turn sent once or
    /// skipped), each lane plays its share in order, cyclically, one whole
    /// tree at a time, and nothing is left in flight.
    #[test]
    fn looping_lanes_reach_the_deadline(
        w in gen::workload(SMALL),
        p in gen::looping_policy(),
        svc in gen::service(),
    ) {
        let ctx = show::case(&w, &p, &svc);
        let (mut s, trace) = run(&w, &p, &svc);
        prop_assert!(!trace.livelock, "no end after {} steps ({} plays started, time stuck at {}){}", driver::STEP_LIMIT, s.plays().len(), trace.end, ctx);
        prop_assert!(s.is_finished());
        prop_assert_eq!(s.poll_command(), None);
        let unique: BTreeSet<_> = trace.dispatched.iter().copied().collect();
        prop_assert_eq!(unique.len(), trace.dispatched.len());
        for (l, lane) in s.lanes().iter().enumerate() {
            let plays: Vec<usize> = (0..s.plays().len()).filter(|&i| s.plays()[i].lane == Some(l as u32)).collect();
            for (k, &i) in plays.iter().enumerate() {
                let play = &s.plays()[i];
                prop_assert_eq!((play.tree, play.copy), lane.share[k % lane.share.len()]);
                if let Some(&next) = plays.get(k + 1) {
                    prop_assert_eq!(s.plays()[next].started, play.done);
                }
            }
        }
    }
}

/// Small sanity check of the generators: they produce what the issue asks
/// for (nesting to depth 4, fan-outs to 16, overlaps, unknown durations,
/// equal timestamps, trees arriving together, explicit DAGs).
#[test]
fn generators_cover_the_shapes_the_issue_asks_for() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut depth4, mut fan16, mut overlap, mut unknown, mut equal, mut together, mut bg, mut dag) =
        (false, false, false, false, false, false, false, false);
    for _ in 0..2000 {
        let w: Workload = gen::any_workload(MEDIUM)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let arrivals: Vec<_> = w.trees.iter().map(|t| t.arrival).collect();
        together |= arrivals.len() > 2 && arrivals.iter().all(|&a| a == arrivals[0]);
        for t in &w.trees {
            dag |= t.explicit_edges.as_ref().is_some_and(|e| !e.is_empty());
            let mut depth = vec![0u32; t.agents.len()];
            let mut kids = vec![0u32; t.agents.len()];
            for (i, a) in t.agents.iter().enumerate() {
                if let Some(p) = a.parent {
                    depth[i] = depth[p as usize] + 1;
                    kids[p as usize] += 1;
                }
                bg |= a.kind == arbor_engine::AgentKind::Background;
                unknown |= a.turns.iter().any(|x| x.duration.is_none());
                overlap |= a.turns.windows(2).any(|x| x[0].end() > x[1].start);
                equal |= a.turns.windows(2).any(|x| x[0].start == x[1].start);
            }
            depth4 |= depth.contains(&4);
            fan16 |= kids.contains(&16);
            assert!(depth.iter().all(|&d| d <= 4));
        }
    }
    assert!(depth4 && fan16 && overlap && unknown && equal && together && bg && dag);
    let _ = SMALL;
}

/// A looping lane whose tree takes no time at all (every duration 0 or
/// unknown under the `recorded` model, every gap 0) must still let the
/// run reach its `--duration` and end. Minimal case of the engine bug
/// found by `looping_lanes_reach_the_deadline`.
#[test]
fn a_looping_lane_of_a_zero_time_tree_terminates() {
    use arbor_engine::model::{Agent, AgentKind, Tree, Turn};
    use arbor_engine::time::NANOS_PER_MS;
    use arbor_proptests::Service;
    use arbor_sim::ServiceModel;
    let w = Workload {
        trees: vec![Tree {
            id: "t0".into(),
            agents: vec![Agent {
                id: "a0".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns: vec![Turn {
                    start: 0,
                    duration: Some(0),
                    ..Turn::default()
                }],
            }],
            ..Tree::default()
        }],
    };
    let p = Policy {
        sessions: Some(1),
        loop_lanes: true,
        duration: Some(10 * NANOS_PER_MS),
        ..Policy::default()
    };
    let (s, trace) = run(&w, &p, &Service::Model(ServiceModel::Recorded));
    assert!(
        !trace.livelock,
        "no end after {} driver steps: {} plays started, time stuck at {} ns",
        driver::STEP_LIMIT,
        s.plays().len(),
        trace.end
    );
}
