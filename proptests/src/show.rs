//! Compact renderings for assertion messages and determinism checks.
//!
//! A workload prints one line per agent, times in ms:
//! `t0@1 a2<a0 blk end=9: 3+2T 5+?U 5+0` means tree `t0` arrives at 1 ms;
//! agent `a2`, a blocking child of `a0` with recorded end 9 ms, has turns
//! starting at 3, 5 and 5 ms lasting 2 ms, unknown and 0 ms, whose inputs
//! are a tool result, user text and unknown. Explicit edges print as
//! `edges: 0>2e1 1>3s0` (from>to, end/start anchor, gap in ms).

use std::fmt::Write;

use arbor_engine::model::{AgentKind, Anchor, InputKind};
use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::Nanos;
use arbor_engine::Workload;

fn ms(ns: Nanos) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}", ns / 1_000_000)
    } else {
        format!("{}", ns as f64 / 1e6)
    }
}

/// The workload, one line per agent.
pub fn workload(w: &Workload) -> String {
    let mut out = String::new();
    for tree in &w.trees {
        for (i, a) in tree.agents.iter().enumerate() {
            let head = if i == 0 {
                format!("{}@{}", tree.id, ms(tree.arrival))
            } else {
                " ".repeat(tree.id.len() + 1 + ms(tree.arrival).len())
            };
            let kind = match (a.parent, a.kind) {
                (None, _) => String::new(),
                (Some(p), AgentKind::Background) => format!("<a{p} bg"),
                (Some(p), _) => format!("<a{p} blk"),
            };
            let end = a
                .recorded_end
                .map_or(String::new(), |e| format!(" end={}", ms(e)));
            let _ = write!(out, "{head} {}{kind}{end}:", a.id);
            for t in &a.turns {
                let d = t.duration.map_or("?".to_string(), ms);
                let k = match t.input_kind {
                    InputKind::ToolResult => "T",
                    InputKind::UserText => "U",
                    InputKind::Unknown => "",
                };
                let _ = write!(out, " {}+{d}{k}", ms(t.start));
            }
            out.push('\n');
        }
        if let Some(edges) = &tree.explicit_edges {
            let _ = write!(out, "  edges:");
            for e in edges {
                let a = if e.anchor == Anchor::End { 'e' } else { 's' };
                let _ = write!(out, " {}>{}{a}{}", e.from, e.to, ms(e.gap));
            }
            out.push('\n');
        }
    }
    out
}

/// The whole timeline of a finished run: every slot, play, lane and the
/// counters, one line each. Two runs with equal timelines made the same
/// plan.
pub fn timeline(s: &Scheduler) -> String {
    let mut out = String::new();
    for (id, x) in s.slots().iter().enumerate() {
        let _ = writeln!(
            out,
            "r{id} p{} t{} {} elig={} disp={} sent={} end={} shift={}/{}/{}",
            x.play,
            x.turn,
            x.state.as_str(),
            x.eligible,
            x.dispatched,
            x.sent,
            x.end,
            x.shift_at_eligible,
            x.shift_at_sent,
            x.shift_at_end
        );
    }
    for (i, p) in s.plays().iter().enumerate() {
        let _ = writeln!(
            out,
            "play{i} tree{} copy{} lane{:?} planned={} started={:?} done={:?}",
            p.tree, p.copy, p.lane, p.planned, p.started, p.done
        );
    }
    for (i, l) in s.lanes().iter().enumerate() {
        let _ = writeln!(
            out,
            "lane{i} share={:?} plays={} dry={:?}",
            l.share, l.plays, l.dry_at
        );
    }
    let _ = writeln!(out, "{:?}", s.stats());
    out
}

/// A short timeline: `r<id> p<play> t<turn> elig/sent/end` in ms.
pub fn short(s: &Scheduler) -> String {
    let mut out = String::new();
    for (id, x) in s.slots().iter().enumerate() {
        let _ = writeln!(
            out,
            "r{id} p{} t{} {} {}/{}/{}",
            x.play,
            x.turn,
            x.state.as_str(),
            ms(x.eligible),
            ms(x.sent),
            ms(x.end)
        );
    }
    out
}

/// Workload, policy and service of a case, for assertion messages.
pub fn case(
    w: &Workload,
    p: &arbor_engine::policy::Policy,
    service: &crate::driver::Service,
) -> String {
    format!(
        "\nworkload:\n{}policy: {p:?}\nservice: {service:?}\n",
        workload(w)
    )
}
