//! Sessions and agents inferred from the traffic, for lines that say
//! `"infer": true` and carry no `agent_id` (what `arbor record` writes).
//!
//! Owns [`place`]: within each session (a stated `session_id`, else the
//! default one), lines are grouped into conversations and the
//! conversations into trees, by these rules (docs/formats/openai-log.md,
//! "Inferred agents"):
//!
//! - **continuity**: taken by start, a line whose messages extend an
//!   earlier line's messages plus that line's answer (the rule that stores
//!   a turn as a delta) is that conversation's next turn, if the earlier
//!   one had ended by then; several candidates: the one that ended last;
//! - **child**: a conversation that continues none and starts while
//!   another is waiting on a tool result (its latest turn has ended and
//!   its next turn, starting later, carries a tool result) is that one's
//!   child; several waiting: the one that began waiting last. The child is
//!   blocking (joined by the parent turn that follows its end) unless it
//!   outlives the wait, then background;
//! - **trees**: every conversation that is no one's child is the root of a
//!   tree: the first takes the session's name, the others `session.2`,
//!   `session.3`, ... Agents are named `conv-1`, `conv-2`, ... by first
//!   start, skipping names the session's stated agents use.
//!
//! Reads and rewrites only [`Placed`] (session, agent, parent and
//! background); no I/O.

use std::collections::{BTreeMap, BTreeSet};

use arbor_engine::model::{LinkSource, Role};

use super::{delta_after, Entry, Placed};

/// The rule a child's parent is inferred by, as `inspect` names it.
pub(super) const TOOL_WAIT: &str = "tool wait";

/// What was inferred, for `inspect`'s conventions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Inferred {
    pub lines: usize,
    pub agents: usize,
    pub trees: usize,
}

/// Places every inferred line of `read`: its session (tree), agent,
/// parent and background flag.
pub(super) fn place(read: &mut [Placed]) -> Inferred {
    let mut taken: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, p) in read.iter().enumerate() {
        if p.inferred {
            groups.entry(p.session.clone()).or_default().push(i);
        } else {
            taken
                .entry(p.session.clone())
                .or_default()
                .insert(p.agent.clone());
        }
    }
    let mut out = Inferred::default();
    let none = BTreeSet::new();
    for (session, members) in groups {
        let taken = taken.get(&session).unwrap_or(&none);
        place_session(read, &session, members, taken, &mut out);
    }
    out
}

/// When a turn's answer had ended (its start when the end is unknown).
fn end_of(e: &Entry) -> u64 {
    e.end.unwrap_or(e.start)
}

fn entry(read: &[Placed], i: usize) -> Option<&Entry> {
    read.get(i).map(|p| &p.entry)
}

/// Conversations by continuity: lists of indices into `read`, each in
/// start order; the conversations in order of their first start.
fn conversations(read: &[Placed], members: &[usize]) -> Vec<Vec<usize>> {
    let mut convs: Vec<Vec<usize>> = Vec::new();
    for &i in members {
        let Some(e) = entry(read, i) else { continue };
        let mut best: Option<(u64, usize)> = None;
        for (c, turns) in convs.iter().enumerate() {
            let Some(last) = turns.last().and_then(|&l| entry(read, l)) else {
                continue;
            };
            let ended = end_of(last);
            let extends = ended <= e.start
                && e.messages.len() > last.messages.len()
                && delta_after(
                    &e.messages,
                    &last.messages,
                    last.response.as_deref(),
                    &last.response_calls,
                )
                .is_some();
            if extends && best.is_none_or(|(b, _)| ended > b) {
                best = Some((ended, c));
            }
        }
        match best.and_then(|(_, c)| convs.get_mut(c)) {
            Some(turns) => turns.push(i),
            None => convs.push(vec![i]),
        }
    }
    convs
}

/// The conversation (of those before `c`) waiting on a tool result when
/// `c` starts, and when its wait ends (its next turn's start).
fn waiting_parent(read: &[Placed], convs: &[Vec<usize>], c: usize) -> Option<(usize, u64)> {
    let t = convs
        .get(c)
        .and_then(|turns| turns.first())
        .and_then(|&i| entry(read, i))?
        .start;
    let mut best: Option<(u64, usize, u64)> = None;
    for (p, turns) in convs.iter().enumerate().take(c) {
        let Some(k) = turns
            .iter()
            .rposition(|&i| entry(read, i).is_some_and(|e| e.start <= t))
        else {
            continue;
        };
        let waited = turns.get(k).and_then(|&i| entry(read, i));
        let resume = turns.get(k + 1).and_then(|&i| entry(read, i));
        let (Some(waited), Some(resume)) = (waited, resume) else {
            continue;
        };
        let since = end_of(waited);
        let on_tool = resume.messages.last().map(|m| m.role) == Some(Role::Tool);
        if since <= t && on_tool && best.is_none_or(|(b, _, _)| since > b) {
            best = Some((since, p, resume.start));
        }
    }
    best.map(|(_, p, resume)| (p, resume))
}

fn place_session(
    read: &mut [Placed],
    session: &str,
    mut members: Vec<usize>,
    taken: &BTreeSet<String>,
    out: &mut Inferred,
) {
    members.sort_by_key(|&i| entry(read, i).map(|e| (e.start, e.line)));
    let convs = conversations(read, &members);

    let mut parent: Vec<Option<usize>> = vec![None; convs.len()];
    let mut background = vec![false; convs.len()];
    for c in 1..convs.len() {
        if let Some((p, resume)) = waiting_parent(read, &convs, c) {
            let last_end = convs
                .get(c)
                .into_iter()
                .flatten()
                .filter_map(|&i| entry(read, i))
                .map(end_of)
                .max()
                .unwrap_or(0);
            if let (Some(slot), Some(bg)) = (parent.get_mut(c), background.get_mut(c)) {
                *slot = Some(p);
                *bg = last_end > resume;
            }
        }
    }

    let mut trees: Vec<String> = Vec::with_capacity(convs.len());
    let mut roots = 0usize;
    for p in &parent {
        let tree = match p.and_then(|p| trees.get(p)) {
            Some(t) => t.clone(),
            None => {
                roots += 1;
                if roots == 1 {
                    session.to_string()
                } else {
                    format!("{session}.{roots}")
                }
            }
        };
        trees.push(tree);
    }
    let mut names: Vec<String> = Vec::with_capacity(convs.len());
    let mut n = 0usize;
    while names.len() < convs.len() {
        n += 1;
        let name = format!("conv-{n}");
        if !taken.contains(&name) {
            names.push(name);
        }
    }

    for (c, turns) in convs.iter().enumerate() {
        let parent_name = parent
            .get(c)
            .copied()
            .flatten()
            .and_then(|p| names.get(p))
            .cloned();
        for &i in turns {
            let Some(placed) = read.get_mut(i) else {
                continue;
            };
            if let (Some(tree), Some(name)) = (trees.get(c), names.get(c)) {
                placed.session = tree.clone();
                placed.agent = name.clone();
            }
            placed.entry.parent_source = parent_name
                .as_ref()
                .map(|_| LinkSource::Inferred(TOOL_WAIT.into()));
            placed.entry.parent = parent_name.clone();
            placed.entry.background = background.get(c).copied().unwrap_or(false);
        }
    }
    out.lines += members.len();
    out.agents += convs.len();
    out.trees += roots;
}

#[cfg(test)]
mod tests {
    use super::super::super::test_support::scratch_file;
    use super::super::load;
    use crate::input::Loaded;
    use arbor_engine::model::{AgentKind, LinkSource};
    use serde_json::{json, Value};

    const S: u64 = 1_800_000_000_000_000_000;

    fn line(start_ms: u64, end_ms: u64, messages: Value, answer: &str) -> String {
        json!({
            "start": (S + start_ms * 1_000_000) as f64 / 1e9,
            "start_ns": S + start_ms * 1_000_000,
            "end_ns": S + end_ms * 1_000_000,
            "infer": true,
            "request": {"messages": messages},
            "response": {"content": answer, "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        })
        .to_string()
    }

    fn load_lines(lines: &[String]) -> Loaded {
        let path = scratch_file("infer", lines.join("\n").as_bytes());
        let loaded = load(&path).expect("loads");
        std::fs::remove_file(&path).ok();
        loaded
    }

    fn m(role: &str, content: &str) -> Value {
        json!({"role": role, "content": content})
    }

    #[test]
    fn children_spawned_during_a_tool_wait_join_their_parent() {
        let sys = m("system", "S");
        let user = m("user", "U");
        let lines = [
            line(0, 1000, json!([sys, user]), "A1"),
            line(
                2000,
                3000,
                json!([sys, user, m("assistant", "A1"), m("tool", "T1")]),
                "A2",
            ),
            line(
                3100,
                3500,
                json!([m("system", "C"), m("user", "task 1")]),
                "B1",
            ),
            line(
                3200,
                3600,
                json!([m("system", "C"), m("user", "task 2")]),
                "C1",
            ),
            line(
                3700,
                4000,
                json!([
                    m("system", "C"),
                    m("user", "task 1"),
                    m("assistant", "B1"),
                    m("tool", "X")
                ]),
                "B2",
            ),
            line(
                4500,
                5000,
                json!([
                    sys,
                    user,
                    m("assistant", "A1"),
                    m("tool", "T1"),
                    m("assistant", "A2"),
                    m("tool", "T2")
                ]),
                "A3",
            ),
            line(10_000, 11_000, json!([m("user", "other")]), "O1"),
        ];
        let loaded = load_lines(&lines);
        assert_eq!(loaded.trees.len(), 2);
        let tree = &loaded.trees[0];
        assert_eq!(tree.id, "default");
        let shape: Vec<(&str, Option<u32>, AgentKind, usize)> = tree
            .agents
            .iter()
            .map(|a| (a.id.as_str(), a.parent, a.kind, a.turns.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("conv-1", None, AgentKind::Root, 3),
                ("conv-2", Some(0), AgentKind::Blocking, 2),
                ("conv-3", Some(0), AgentKind::Blocking, 1),
            ]
        );
        // Exact nanoseconds from start_ns.
        assert_eq!(tree.agents[1].turns[0].start, 3_100_000_000);
        assert_eq!(tree.agents[1].turns[1].start, 3_700_000_000);
        assert_eq!(tree.agents[0].turns[2].duration, Some(500_000_000));
        assert!(tree.agents[0].turns[2]
            .text
            .as_ref()
            .is_some_and(|t| t.extends_previous));
        let inferred = LinkSource::Inferred(super::TOOL_WAIT.into());
        let links: Vec<(u32, &LinkSource)> = tree
            .provenance
            .parents
            .iter()
            .map(|l| (l.agent, &l.source))
            .collect();
        assert_eq!(links, [(1, &inferred), (2, &inferred)]);
        let other = &loaded.trees[1];
        assert_eq!(other.id, "default.2");
        assert_eq!(other.arrival, 10_000_000_000);
        assert_eq!(other.agents[0].id, "conv-4");
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("7 lines without agent_id inferred into 4 agents of 2 trees")));
    }

    #[test]
    fn a_child_outliving_the_wait_is_background_and_no_tool_wait_means_no_parent() {
        let lines = [
            line(0, 1000, json!([m("user", "U")]), "A1"),
            // Starts while the root waits, ends after the root resumed.
            line(1500, 5000, json!([m("user", "side job")]), "B1"),
            line(
                2000,
                3000,
                json!([m("user", "U"), m("assistant", "A1"), m("tool", "T")]),
                "A2",
            ),
            // The root's next turn is a user message: no tool wait.
            line(3500, 3600, json!([m("user", "late")]), "C1"),
            line(
                4000,
                4500,
                json!([
                    m("user", "U"),
                    m("assistant", "A1"),
                    m("tool", "T"),
                    m("assistant", "A2"),
                    m("user", "more")
                ]),
                "A3",
            ),
        ];
        let loaded = load_lines(&lines);
        let kinds: Vec<(String, AgentKind)> = loaded
            .trees
            .iter()
            .flat_map(|t| {
                t.agents
                    .iter()
                    .map(|a| (format!("{}/{}", t.id, a.id), a.kind))
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("default/conv-1".to_string(), AgentKind::Root),
                ("default/conv-2".to_string(), AgentKind::Background),
                ("default.2/conv-3".to_string(), AgentKind::Root),
            ]
        );
    }

    #[test]
    fn stated_agents_are_left_alone_and_inference_is_per_session() {
        let mut stated: Value =
            serde_json::from_str(&line(0, 10, json!([m("user", "x")]), "a")).expect("json");
        stated["agent_id"] = json!("conv-1");
        stated["session_id"] = json!("s");
        let mut inferred: Value =
            serde_json::from_str(&line(20, 30, json!([m("user", "y")]), "b")).expect("json");
        inferred["session_id"] = json!("t");
        let loaded = load_lines(&[stated.to_string(), inferred.to_string()]);
        let ids: Vec<(&str, &str)> = loaded
            .trees
            .iter()
            .map(|t| (t.id.as_str(), t.agents[0].id.as_str()))
            .collect();
        assert_eq!(ids, [("s", "conv-1"), ("t", "conv-1")]);
    }
}
