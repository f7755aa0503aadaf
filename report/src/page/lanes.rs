//! Swim lanes: one row per agent of a play (a tree's instance), rows
//! grouped by play, each row's turns in `sent` order. Stored as columns of
//! integers (microseconds from the run's epoch, token counts; -1 for
//! nothing) so a 100k-request run stays a few megabytes and the page can
//! binary-search a row for what is visible.

use std::collections::BTreeMap;

use serde::Serialize;

use super::record::{Record, Status, Turn};
use arbor_runs::shape::{EdgeRole, TreeShape};

/// One row: an agent of one play.
#[derive(Debug, Serialize)]
pub struct Row {
    pub play: u32,
    pub tree: String,
    pub agent: String,
    pub copy: u32,
    pub lane: Option<u32>,
}

/// The turns of every row, as columns; row `r`'s turns are
/// `row_start[r]..row_start[r + 1]`, in `sent` order.
#[derive(Debug, Default, Serialize)]
pub struct Lanes {
    pub rows: Vec<Row>,
    pub row_start: Vec<u32>,
    pub request: Vec<u64>,
    pub turn: Vec<u32>,
    /// 0 ok, 1 error, 2 cancelled, 3 warmup.
    pub status: Vec<u8>,
    pub eligible_us: Vec<i64>,
    pub sent_us: Vec<i64>,
    pub first_us: Vec<i64>,
    pub done_us: Vec<i64>,
    pub queue_wait_us: Vec<i64>,
    pub input_tokens: Vec<i64>,
    pub output_tokens: Vec<i64>,
    pub cached_tokens: Vec<i64>,
    /// Index in `errors`, or -1.
    pub error: Vec<i64>,
    pub errors: Vec<ErrorText>,
}

impl Lanes {
    /// Spawn and join arrows between turns of these lanes, from the trees'
    /// shapes (`trees.jsonl`): `[from, to, role]` with `from` and `to`
    /// indices into the turn columns and `role` 0 for a spawn, 1 for a
    /// join. An edge whose turns did not both run (skipped, history,
    /// warmups) has no arrow.
    pub fn arrows(&self, trees: &[TreeShape]) -> Vec<[u32; 3]> {
        let shapes: BTreeMap<&str, &TreeShape> =
            trees.iter().map(|t| (t.tree.as_str(), t)).collect();
        // (play, agent, turn) -> index of the turn in the columns.
        let mut at: BTreeMap<(u32, &str, u32), u32> = BTreeMap::new();
        for (r, row) in self.rows.iter().enumerate() {
            let (Some(&s), Some(&e)) = (self.row_start.get(r), self.row_start.get(r + 1)) else {
                continue;
            };
            for i in s..e {
                if self.status.get(i as usize) != Some(&3) {
                    at.insert((row.play, row.agent.as_str(), self.turn[i as usize]), i);
                }
            }
        }
        let mut plays: BTreeMap<u32, &str> = BTreeMap::new();
        for row in &self.rows {
            plays.entry(row.play).or_insert(row.tree.as_str());
        }
        let mut arrows = Vec::new();
        for (&play, tree) in &plays {
            let Some(shape) = shapes.get(tree) else {
                continue;
            };
            let agent = |i: u32| shape.agents.get(i as usize).map(|a| a.agent.as_str());
            for edge in &shape.edges {
                let role = match edge.role {
                    EdgeRole::Spawn => 0,
                    EdgeRole::Join => 1,
                    EdgeRole::Other => continue,
                };
                let (Some(from_agent), Some(to_agent)) =
                    (agent(edge.from_agent), agent(edge.to_agent))
                else {
                    continue;
                };
                let from = at.get(&(play, from_agent, edge.from_turn));
                let to = at.get(&(play, to_agent, edge.to_turn));
                if let (Some(&from), Some(&to)) = (from, to) {
                    arrows.push([from, to, role]);
                }
            }
        }
        arrows
    }
}

/// A failed request's error, as its record said it.
#[derive(Debug, Serialize)]
pub struct ErrorText {
    pub category: String,
    pub message: String,
}

/// Collects rows and turns as records stream by.
#[derive(Default)]
pub struct LaneBuilder {
    /// play -> agent -> row index (in order of first appearance).
    index: BTreeMap<u32, BTreeMap<String, u32>>,
    rows: Vec<Row>,
    turns: Vec<(u32, Turn)>,
    errors: Vec<ErrorText>,
}

/// Which row a turn belongs to: its agent in its play.
#[derive(Debug, Clone, Copy)]
pub struct RowKey<'a> {
    pub play: u32,
    pub tree: &'a str,
    pub agent: &'a str,
    pub copy: u32,
    pub lane: Option<u32>,
}

impl LaneBuilder {
    /// Adds a record; returns its turn (with its error index set).
    pub fn add(&mut self, r: &Record) -> &Turn {
        let key = RowKey {
            play: r.play.unwrap_or(0),
            tree: r.tree.as_deref().unwrap_or(""),
            agent: r.agent.as_deref().unwrap_or(""),
            copy: r.copy.unwrap_or(0),
            lane: r.lane,
        };
        let error = r.error.as_ref().map(|e| ErrorText {
            category: e.category.as_str().to_string(),
            message: e.message.as_deref().unwrap_or("").to_string(),
        });
        self.push(key, Turn::of(r), error)
    }

    /// Adds `turn` to the row of `key`, with its error if it failed;
    /// returns it (with its error index set).
    pub fn push(&mut self, key: RowKey, mut turn: Turn, error: Option<ErrorText>) -> &Turn {
        let agents = self.index.entry(key.play).or_default();
        let row = match agents.get(key.agent) {
            Some(&row) => row,
            None => {
                let row = self.rows.len() as u32;
                agents.insert(key.agent.to_string(), row);
                self.rows.push(Row {
                    play: key.play,
                    tree: key.tree.to_string(),
                    agent: key.agent.to_string(),
                    copy: key.copy,
                    lane: key.lane,
                });
                row
            }
        };
        if let Some(e) = error {
            turn.error = Some(self.errors.len() as u32);
            self.errors.push(e);
        }
        self.turns.push((row, turn));
        let last = self.turns.len() - 1;
        &self.turns[last].1
    }

    /// The turns collected so far, in record order.
    pub fn turns(&self) -> impl Iterator<Item = &Turn> + Clone {
        self.turns.iter().map(|(_, t)| t)
    }

    /// Error classes by error index.
    pub fn classes(&self) -> Vec<&str> {
        self.errors.iter().map(|e| e.category.as_str()).collect()
    }

    /// Rows ordered by play, then by their first turn's `sent`.
    pub fn finish(self) -> Lanes {
        let LaneBuilder {
            rows,
            mut turns,
            errors,
            ..
        } = self;
        let mut first_sent = vec![u64::MAX; rows.len()];
        for (row, t) in &turns {
            let slot = &mut first_sent[*row as usize];
            *slot = (*slot).min(t.sent);
        }
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_by_key(|&r| (rows[r as usize].play, first_sent[r as usize], r));
        let mut rank = vec![0u32; rows.len()];
        for (i, &r) in order.iter().enumerate() {
            rank[r as usize] = i as u32;
        }
        turns.sort_by_key(|(row, t)| (rank[*row as usize], t.sent, t.request));

        let mut rows: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
        let mut lanes = Lanes {
            rows: order
                .iter()
                .filter_map(|&r| rows.get_mut(r as usize).and_then(Option::take))
                .collect(),
            errors,
            ..Lanes::default()
        };
        let mut row_start = vec![0u32; lanes.rows.len() + 1];
        for (row, _) in &turns {
            row_start[rank[*row as usize] as usize + 1] += 1;
        }
        for i in 1..row_start.len() {
            row_start[i] += row_start[i - 1];
        }
        lanes.row_start = row_start;
        let us = |ns: u64| (ns / 1_000) as i64;
        let count = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        for (_, t) in &turns {
            lanes.request.push(t.request);
            lanes.turn.push(t.turn);
            lanes.status.push(match t.status {
                Status::Ok => 0,
                Status::Error => 1,
                Status::Cancelled => 2,
                Status::Warmup => 3,
            });
            lanes.eligible_us.push(us(t.eligible));
            lanes.sent_us.push(us(t.sent));
            lanes.first_us.push(t.first.map_or(-1, us));
            lanes.done_us.push(us(t.done));
            lanes.queue_wait_us.push(us(t.queue_wait));
            lanes.input_tokens.push(count(t.input_tokens));
            lanes.output_tokens.push(count(t.output_tokens));
            lanes.cached_tokens.push(t.cached_tokens.map_or(-1, count));
            lanes.error.push(t.error.map_or(-1, i64::from));
        }
        lanes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: &str) -> Record<'_> {
        serde_json::from_str(line).expect("a record")
    }

    #[test]
    fn rows_are_grouped_by_play_and_turns_ordered_by_sent() {
        let lines = [
            r#"{"request":2,"tree":"t","agent":"child","turn":0,"lane":null,"play":0,"status":"error","eligible_s":0.3,"sent_s":0.3,"first_content_s":null,"done_s":0.4,"error":{"category":"timeout","message":"slow"}}"#,
            r#"{"request":1,"tree":"t","agent":"root","turn":1,"lane":null,"play":0,"status":"ok","eligible_s":0.2,"sent_s":0.2,"first_content_s":0.25,"done_s":0.5}"#,
            r#"{"request":0,"tree":"t","agent":"root","turn":0,"lane":null,"play":0,"status":"ok","eligible_s":0.0,"sent_s":0.001,"first_content_s":0.05,"done_s":0.1}"#,
            r#"{"request":3,"tree":"u","agent":"root","turn":0,"lane":2,"play":1,"status":"ok","eligible_s":0.0,"sent_s":0.0,"first_content_s":0.01,"done_s":0.02}"#,
        ];
        let mut builder = LaneBuilder::default();
        for line in lines {
            builder.add(&record(line));
        }
        assert_eq!(builder.classes(), ["timeout"]);
        let lanes = builder.finish();
        let rows: Vec<(u32, &str)> = lanes
            .rows
            .iter()
            .map(|r| (r.play, r.agent.as_str()))
            .collect();
        assert_eq!(rows, [(0, "root"), (0, "child"), (1, "root")]);
        assert_eq!(lanes.row_start, [0, 2, 3, 4]);
        assert_eq!(lanes.request, [0, 1, 2, 3]);
        assert_eq!(lanes.sent_us, [1_000, 200_000, 300_000, 0]);
        assert_eq!(lanes.first_us[2], -1, "no content");
        assert_eq!(lanes.status, [0, 0, 1, 0]);
        assert_eq!(lanes.error, [-1, -1, 0, -1]);
        assert_eq!(lanes.rows[2].lane, Some(2));
    }
}
