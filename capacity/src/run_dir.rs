//! What a live probe reads back: a run directory `arbor run` wrote
//! (`records.jsonl`, and `run.json` for how many turns each tree has) as
//! one point's [`Observed`]. Warmups are left out, a cancelled request is
//! no observation, an `error` one is a failed request; a play
//! with a record for every turn of its tree and none cancelled is a job
//! (its first send to its last done). Owns reading a run directory into
//! observations (a record read by the one reader,
//! [`arbor_runs::record_line`]; its `tree_index` and `play` needed);
//! never changes how a run runs, and writes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_engine::time::Nanos;
use arbor_error::Error;
use arbor_runs::record::{secs_ns as ns, Status};
use arbor_runs::record_line::{self, need};
use arbor_runs::records_file::RECORDS_FILE;

use crate::observed::{Flight, Gaps, Observed, RequestSeen};

/// A play's records so far.
#[derive(Default)]
struct Span {
    tree_index: u32,
    records: u32,
    cancelled: bool,
    first_sent: Option<Nanos>,
    last_done: Option<Nanos>,
    /// Each agent's first send and last done, by its id.
    agents: BTreeMap<String, (Nanos, Nanos)>,
}

/// The observations of a run directory `arbor run` wrote.
pub fn read(dir: &Path) -> Result<Observed, Error> {
    let tree_turns = tree_turns(dir)?;
    let mut observed = Observed::default();
    let mut plays: BTreeMap<u32, Span> = BTreeMap::new();
    record_line::read(&dir.join(RECORDS_FILE), |line, _| {
        let (tree_index, play) = (
            need(line.tree_index, "tree_index")?,
            need(line.play, "play")?,
        );
        if line.is_warmup() {
            return Ok(());
        }
        let span = plays.entry(play).or_default();
        span.tree_index = tree_index;
        span.records += 1;
        let sent = line.sent_s.map(ns);
        let done = line.done_s.map(ns);
        span.first_sent = match (span.first_sent, sent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        span.last_done = span.last_done.max(done);
        if let (Some(sent), Some(done)) = (sent, done) {
            let name = line.agent.as_deref().unwrap_or("");
            match span.agents.get_mut(name) {
                Some(agent) => *agent = (agent.0.min(sent), agent.1.max(done)),
                None => {
                    span.agents.insert(name.to_string(), (sent, done));
                }
            }
        }
        match line.status {
            Status::Cancelled => span.cancelled = true,
            Status::Ok => observed.requests.push(RequestSeen {
                ok: true,
                ttft: line.ttft_s.map(ns),
                e2e: line.e2e_s.map_or(0, ns),
                tpot: line.tpot_s.map(ns),
                gaps: Gaps::Listed(line.itl_s.values()?.into_iter().map(ns).collect()),
            }),
            Status::Error => observed.requests.push(RequestSeen::failed()),
        }
        Ok(())
    })?;
    for span in plays.values() {
        let all_there = tree_turns
            .get(span.tree_index as usize)
            .is_none_or(|&t| span.records >= t);
        if let (Some(s), Some(d), true, false) =
            (span.first_sent, span.last_done, all_there, span.cancelled)
        {
            observed.jobs.push(d.saturating_sub(s));
        }
        if let (Some(start), Some(end)) = (span.first_sent, span.last_done) {
            observed.flights.push(Flight {
                start,
                end,
                agents: span.agents.values().copied().collect(),
            });
        }
    }
    Ok(observed)
}

/// `run.json`'s turns per tree (a play with fewer records did not finish).
fn tree_turns(dir: &Path) -> Result<Vec<u32>, Error> {
    let path = dir.join(arbor_runs::journal::RUN_FILE);
    let text = arbor_runs::file_cap::read_to_string(&path)
        .map_err(|e| Error::other(format!("{}: cannot read: {e}", path.display())))?;
    let start: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::other(format!("{}: not JSON: {e}", path.display())))?;
    Ok(start["tree_turns"]
        .as_array()
        .map(|turns| {
            turns
                .iter()
                .map(|t| t.as_u64().map_or(0, |t| t as u32))
                .collect()
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_run_directory_reads_into_requests_and_jobs() {
        let dir = std::env::temp_dir().join(format!("arbor-capacity-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), r#"{"tree_turns": [2, 2, 1]}"#).unwrap();
        let line = |play: u32, tree: u32, status: &str, sent: f64, done: f64| {
            format!(
                r#"{{"tree_index": {tree}, "play": {play}, "warmup": false, "status": "{status}", "sent_s": {sent}, "done_s": {done}, "ttft_s": 0.1, "e2e_s": {}, "tpot_s": 0.01, "itl_s": [0.01, 0.02]}}"#,
                done - sent
            )
        };
        let lines = [
            // Play 0: both turns, a job of 1.5 s.
            line(0, 0, "ok", 0.5, 1.0),
            line(0, 0, "ok", 1.0, 2.0),
            // Play 1: one of two turns, then cancelled: no job.
            line(1, 1, "ok", 0.0, 1.0),
            line(1, 1, "cancelled", 1.0, 3.0),
            // Play 2: one turn, failed: a job, and a failed request.
            line(2, 2, "error", 0.0, 0.25),
            r#"{"tree_index": 0, "play": 9, "warmup": true, "status": "ok"}"#.to_string(),
        ];
        std::fs::write(dir.join("records.jsonl"), lines.join("\n") + "\n").unwrap();
        let observed = read(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(observed.requests.len(), 4);
        assert_eq!(observed.requests.iter().filter(|r| !r.ok).count(), 1);
        let first = &observed.requests[0];
        assert_eq!(first.ttft, Some(100 * MS));
        assert_eq!(first.e2e, 500 * MS);
        assert_eq!(first.gaps, Gaps::Listed(vec![10 * MS, 20 * MS]));
        assert_eq!(observed.jobs, [1500 * MS, 250 * MS]);
    }

    #[test]
    fn each_play_flies_with_its_agents() {
        let dir =
            std::env::temp_dir().join(format!("arbor-capacity-flights-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), r#"{"tree_turns": [3, 1]}"#).unwrap();
        let line = |play: u32, tree: u32, agent: &str, status: &str, sent: f64, done: f64| {
            format!(
                r#"{{"tree_index": {tree}, "play": {play}, "agent": "{agent}", "warmup": false, "status": "{status}", "sent_s": {sent}, "done_s": {done}, "e2e_s": {}}}"#,
                done - sent
            )
        };
        let lines = [
            // Play 0: the root 1..4 s, its subagent 2..3 s beside it.
            line(0, 0, "root", "ok", 1.0, 2.0),
            line(0, 0, "sub", "ok", 2.0, 3.0),
            line(0, 0, "root", "ok", 3.0, 4.0),
            // Play 1: cut short, still in flight 0..0.5 s, no job.
            line(1, 1, "root", "cancelled", 0.0, 0.5),
        ];
        std::fs::write(dir.join("records.jsonl"), lines.join("\n") + "\n").unwrap();
        let observed = read(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(observed.jobs, [3000 * MS]);
        assert_eq!(
            observed.flights,
            [
                Flight {
                    start: 1000 * MS,
                    end: 4000 * MS,
                    agents: vec![(1000 * MS, 4000 * MS), (2000 * MS, 3000 * MS)],
                },
                Flight {
                    start: 0,
                    end: 500 * MS,
                    agents: vec![(0, 500 * MS)],
                },
            ]
        );
    }
}
