//! Writes trees in the Weka kv-cache-tester layout (one JSON object per
//! tree, one per line: the SemiAnalysis corpus layout).
//!
//! Owns the inverse of [`super::weka`] for generated workloads: it is how
//! the benchmarks get large, realistic Weka corpora from the synthetic
//! generator. Subagents are written as inline `type: "subagent"` entries
//! after the parent request that precedes their spawn, in the *relative*
//! convention (marker `t` is the completion, inner `t` relative to the
//! spawn; background children as `async_launched` with `t` the launch).
//! Times are written as exact decimal seconds of the model's nanoseconds,
//! so reading the output back gives the same times.

use std::io::{self, Write};

use arbor_engine::model::{Agent, AgentKind, InputKind, Tree, Turn};
use arbor_engine::time::Nanos;

/// Seconds with nine decimals, trailing zeros trimmed (exact for ns).
fn write_secs(out: &mut impl Write, ns: Nanos) -> io::Result<()> {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return write!(out, "{whole}.0");
    }
    let digits = format!("{frac:09}");
    write!(out, "{whole}.{}", digits.trim_end_matches('0'))
}

/// Milliseconds with six decimals, trailing zeros trimmed (exact for ns).
fn write_millis(out: &mut impl Write, ns: Nanos) -> io::Result<()> {
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        return write!(out, "{whole}");
    }
    let digits = format!("{frac:06}");
    write!(out, "{whole}.{}", digits.trim_end_matches('0'))
}

fn write_str(out: &mut impl Write, text: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, text).map_err(io::Error::other)
}

/// Writes one tree as one line.
pub fn write_trace(tree: &Tree, out: &mut impl Write) -> io::Result<()> {
    out.write_all(b"{\"id\":")?;
    write_str(out, &tree.id)?;
    out.write_all(b",\"models\":[")?;
    for (i, model) in tree.models.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_str(out, model)?;
    }
    let block_size = if tree.block_size == 0 {
        64
    } else {
        tree.block_size
    };
    write!(
        out,
        "],\"block_size\":{block_size},\"hash_id_scope\":\"local\",\"tool_tokens\":{},\"system_tokens\":{},\"requests\":",
        tree.tool_tokens, tree.system_tokens
    )?;
    let children = children_of(tree);
    write_requests(out, tree, &children, 0, 0)?;
    out.write_all(b"}\n")
}

/// Child agent indices of each agent, ordered by first turn start.
fn children_of(tree: &Tree) -> Vec<Vec<usize>> {
    let mut children = vec![Vec::new(); tree.agents.len()];
    for (index, agent) in tree.agents.iter().enumerate() {
        if let Some(parent) = agent.parent.and_then(|p| children.get_mut(p as usize)) {
            parent.push(index);
        }
    }
    for list in &mut children {
        list.sort_by_key(|&c| (spawn_of(&tree.agents[c]), c));
    }
    children
}

fn spawn_of(agent: &Agent) -> Nanos {
    agent.turns.first().map_or(0, |t| t.start)
}

fn end_of(agent: &Agent) -> Nanos {
    let last = agent.turns.iter().map(Turn::end).max().unwrap_or(0);
    agent.recorded_end.unwrap_or(0).max(last)
}

/// Writes the `requests` array of `agent`: its turns with times relative to
/// `base`, and after each turn the subagents spawned before the next one.
fn write_requests(
    out: &mut impl Write,
    tree: &Tree,
    children: &[Vec<usize>],
    agent: usize,
    base: Nanos,
) -> io::Result<()> {
    let turns = &tree.agents[agent].turns;
    let kids = &children[agent];
    let mut next_kid = 0;
    out.write_all(b"[")?;
    let mut first = true;
    let mut separator = |out: &mut dyn Write| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        Ok(())
    };
    for (i, turn) in turns.iter().enumerate() {
        // Children spawned before this turn (and after the previous one).
        while let Some(&kid) = kids.get(next_kid) {
            if i == 0 || spawn_of(&tree.agents[kid]) >= turn.start {
                break;
            }
            separator(out)?;
            write_subagent(out, tree, children, kid, base)?;
            next_kid += 1;
        }
        separator(out)?;
        write_request(out, tree, turn, base)?;
    }
    for &kid in &kids[next_kid..] {
        separator(out)?;
        write_subagent(out, tree, children, kid, base)?;
    }
    out.write_all(b"]")
}

fn write_request(out: &mut impl Write, tree: &Tree, turn: &Turn, base: Nanos) -> io::Result<()> {
    out.write_all(b"{\"t\":")?;
    write_secs(out, turn.start.saturating_sub(base))?;
    out.write_all(b",\"type\":\"n\",\"model\":")?;
    let model = turn
        .model
        .and_then(|m| tree.models.get(m as usize))
        .map_or("unknown", String::as_str);
    write_str(out, model)?;
    write!(
        out,
        ",\"in\":{},\"out\":{},\"hash_ids\":[",
        turn.isl, turn.osl
    )?;
    for (i, id) in turn.hash_ids.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{id}")?;
    }
    let input = match turn.input_kind {
        InputKind::ToolResult => "[\"tool_result\"]",
        InputKind::UserText => "[\"text\"]",
        InputKind::Unknown => "[\"text\",\"tool_result\"]",
    };
    write!(
        out,
        "],\"input_types\":{input},\"output_types\":[\"text\"],\"stop\":\"end_turn\""
    )?;
    if let Some(duration) = turn.duration {
        out.write_all(b",\"api_time\":")?;
        write_secs(out, duration)?;
    }
    if let Some(ttft) = turn.ttft {
        out.write_all(b",\"ttft\":")?;
        write_secs(out, ttft)?;
    }
    out.write_all(b"}")
}

fn write_subagent(
    out: &mut impl Write,
    tree: &Tree,
    children: &[Vec<usize>],
    kid: usize,
    base: Nanos,
) -> io::Result<()> {
    let agent = &tree.agents[kid];
    let spawn = spawn_of(agent);
    out.write_all(b"{\"t\":")?;
    match agent.kind {
        AgentKind::Background => {
            write_secs(out, spawn.saturating_sub(base))?;
            out.write_all(b",\"type\":\"subagent\",\"agent_id\":")?;
            write_str(out, &agent.id)?;
            out.write_all(b",\"subagent_type\":\"general-purpose\",\"duration_ms\":null,\"status\":\"async_launched\"")?;
        }
        _ => {
            let duration = end_of(agent).saturating_sub(spawn);
            write_secs(out, (spawn + duration).saturating_sub(base))?;
            out.write_all(b",\"type\":\"subagent\",\"agent_id\":")?;
            write_str(out, &agent.id)?;
            out.write_all(b",\"subagent_type\":\"Explore\",\"duration_ms\":")?;
            write_millis(out, duration)?;
            out.write_all(b",\"status\":\"completed\"")?;
        }
    }
    out.write_all(b",\"requests\":")?;
    write_requests(out, tree, children, kid, spawn)?;
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::weka::{parse_trace, SubagentTimes};
    use crate::synthetic::SyntheticSpec;

    #[test]
    fn generated_trees_read_back_with_the_same_times() {
        let spec: SyntheticSpec = "trees=6,turns=10,depth=2,spawn=0.5,fanout=3,background=0.3,hash_ids=true,unknown=0.1,seed=21"
            .parse()
            .unwrap();
        let workload = spec.generate();
        let mut subagents = 0;
        for tree in &workload.trees {
            let mut bytes = Vec::new();
            write_trace(tree, &mut bytes).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            let (back, conventions) = parse_trace(&text, "gen.jsonl").unwrap();
            if tree.agents.len() > 1 {
                assert_eq!(conventions.subagent_times, SubagentTimes::Relative);
                subagents += tree.agents.len() - 1;
            }
            assert_eq!(back.agents.len(), tree.agents.len());
            // Agents come back in document order; match them by id.
            for (index, agent) in tree.agents.iter().enumerate() {
                // The root takes the trace's id; children keep theirs.
                let other = match index {
                    0 => &back.agents[0],
                    _ => back
                        .agents
                        .iter()
                        .find(|a| a.id == agent.id)
                        .expect("agent kept"),
                };
                assert_eq!(other.kind, agent.kind, "{}", agent.id);
                let starts = |a: &Agent| {
                    a.turns
                        .iter()
                        .map(|t| (t.start, t.duration, t.isl, t.osl))
                        .collect::<Vec<_>>()
                };
                assert_eq!(starts(other), starts(agent), "{}", agent.id);
                let ids = |a: &Agent| {
                    a.turns
                        .iter()
                        .map(|t| t.hash_ids.clone())
                        .collect::<Vec<_>>()
                };
                assert_eq!(ids(other), ids(agent));
            }
        }
        assert!(subagents > 5, "the spec should produce subagents");
    }
}
