//! Swim lanes: one row per agent of a play (a tree's instance), rows
//! grouped by play, each row's turns in `sent` order. Stored as columns of
//! integers (microseconds from the run's epoch, token counts; -1 for
//! nothing) so the page can binary-search a row for what is visible.
//!
//! Bounded whatever the run's length: the lanes keep whole plays, in the
//! order their first turn reached the builder, while fewer than their
//! budget of turns are kept ([`MAX_LANE_TURNS`] for a page of one source,
//! a share of it for each of several: [`budget_of`]; a play already kept
//! goes on up to twice that), and count the turns they leave out; a failed turn's
//! error text is kept once per distinct text, up to [`MAX_ERROR_TEXTS`].
//! A page of a 100,000-turn run stays about ten megabytes.

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
    /// Distinct error texts.
    pub errors: Vec<ErrorText>,
    /// Turns not in the lanes (their plays started after the lanes were
    /// full).
    pub left_out: u64,
    /// The turns the lanes took new plays up to.
    pub budget: u64,
}

/// Turns the lanes of a page take new plays up to.
pub const MAX_LANE_TURNS: usize = 100_000;
/// The least budget a source of a page with many gets.
pub const MIN_LANE_TURNS: usize = 2_000;

/// The lane budget of each of `sources` on one page: a page's
/// [`MAX_LANE_TURNS`] shared, at least [`MIN_LANE_TURNS`] each, so a page
/// of twenty runs weighs about what a page of one does.
pub fn budget_of(sources: usize) -> usize {
    (MAX_LANE_TURNS / sources.max(1)).max(MIN_LANE_TURNS)
}
/// Distinct error texts kept; later failures show their class only.
pub const MAX_ERROR_TEXTS: usize = 1_000;

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
pub struct LaneBuilder {
    /// Turns new plays are taken up to.
    budget: usize,
    /// play -> agent -> row index (in order of first appearance).
    index: BTreeMap<u32, BTreeMap<String, u32>>,
    rows: Vec<Row>,
    turns: Vec<(u32, Turn)>,
    errors: Vec<ErrorText>,
    /// category -> message -> index in `errors`.
    error_index: BTreeMap<String, BTreeMap<String, u32>>,
    left_out: u64,
}

/// A failed turn's error, borrowed from its record.
#[derive(Debug, Clone, Copy)]
pub struct ErrorRef<'a> {
    pub category: &'a str,
    pub message: &'a str,
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

impl Default for LaneBuilder {
    fn default() -> Self {
        LaneBuilder::with_budget(MAX_LANE_TURNS)
    }
}

impl LaneBuilder {
    /// Lanes that take new plays while fewer than `budget` turns are kept.
    pub fn with_budget(budget: usize) -> Self {
        LaneBuilder {
            budget,
            index: BTreeMap::new(),
            rows: Vec::new(),
            turns: Vec::new(),
            errors: Vec::new(),
            error_index: BTreeMap::new(),
            left_out: 0,
        }
    }

    /// Adds a record's turn (`turn`, made from `r`), if the lanes have
    /// room for it.
    pub fn add(&mut self, r: &Record, turn: Turn) {
        let key = RowKey {
            play: r.play.unwrap_or(0),
            tree: r.tree.as_deref().unwrap_or(""),
            agent: r.agent.as_deref().unwrap_or(""),
            copy: r.copy.unwrap_or(0),
            lane: r.lane,
        };
        let error = r.error.as_ref().map(|e| ErrorRef {
            category: e.category.as_str(),
            message: e.message.as_deref().unwrap_or(""),
        });
        self.push(key, turn, error);
    }

    /// Adds `turn` to the row of `key`, with its error if it failed, if
    /// the lanes have room for it (else counts it left out).
    pub fn push(&mut self, key: RowKey, mut turn: Turn, error: Option<ErrorRef>) {
        let kept = self.turns.len();
        let room = match self.index.contains_key(&key.play) {
            true => kept < 2 * self.budget,
            false => kept < self.budget,
        };
        if !room {
            self.left_out += 1;
            return;
        }
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
        turn.error = error.map(|e| self.error_text(e));
        self.turns.push((row, turn));
    }

    /// The index of an error's text, kept once.
    fn error_text(&mut self, e: ErrorRef) -> u32 {
        if let Some(&i) = self
            .error_index
            .get(e.category)
            .and_then(|m| m.get(e.message))
        {
            return i;
        }
        let message = if self.errors.len() < MAX_ERROR_TEXTS {
            e.message
        } else {
            "(not kept: the page keeps the first 1,000 distinct error messages)"
        };
        let messages = self.error_index.entry(e.category.to_string()).or_default();
        if let Some(&i) = messages.get(message) {
            return i;
        }
        let i = self.errors.len() as u32;
        messages.insert(message.to_string(), i);
        self.errors.push(ErrorText {
            category: e.category.to_string(),
            message: message.to_string(),
        });
        i
    }

    /// Rows ordered by play, then by their first turn's `sent`.
    pub fn finish(self) -> Lanes {
        let LaneBuilder {
            budget,
            rows,
            mut turns,
            errors,
            left_out,
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
            left_out,
            budget: budget as u64,
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

    #[test]
    fn many_sources_share_a_pages_budget_down_to_a_floor() {
        assert_eq!(budget_of(1), MAX_LANE_TURNS);
        assert_eq!(budget_of(0), MAX_LANE_TURNS);
        assert_eq!(budget_of(20), 5_000);
        assert_eq!(budget_of(1_000), MIN_LANE_TURNS);
    }

    #[test]
    fn a_small_budget_keeps_whole_plays_and_says_so() {
        let mut builder = LaneBuilder::with_budget(10);
        let mut request = 0;
        for play in 0..5 {
            for _ in 0..4 {
                let key = RowKey {
                    play,
                    tree: "t",
                    agent: "root",
                    copy: 0,
                    lane: None,
                };
                builder.push(key, turn_at(request, request), None);
                request += 1;
            }
        }
        let lanes = builder.finish();
        // Plays 0-2 started while fewer than 10 turns were kept; play 2
        // went on to its end (12 turns), plays 3 and 4 were left out.
        assert_eq!(lanes.request.len(), 12);
        assert_eq!(lanes.left_out, 8);
        assert_eq!(lanes.budget, 10);
    }

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
            let r = record(line);
            builder.add(&r, Turn::of(&r));
        }
        let lanes = builder.finish();
        assert_eq!(lanes.errors[0].category, "timeout");
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

    fn turn_at(request: u64, sent: u64) -> Turn {
        Turn {
            request,
            turn: 0,
            status: Status::Error,
            eligible: sent,
            sent,
            first: None,
            done: sent + 1,
            queue_wait: 0,
            ttft: None,
            input_tokens: 1,
            output_tokens: 1,
            cached_tokens: None,
            error: None,
        }
    }

    #[test]
    fn the_lanes_keep_whole_plays_up_to_their_cap_and_each_error_text_once() {
        let mut builder = LaneBuilder::default();
        // 2,000 lanes (closed-loop sessions) each playing plays of 10
        // turns one after another, 30,000 plays in all, the lanes'
        // turns interleaved (records come as turns finish); every turn
        // failed with one of 3 texts, except the very last play's, each
        // with a text of its own.
        let (lanes_n, plays, per_play) = (2_000u32, 30_000u32, 10u64);
        let mut request = 0;
        for round in 0..plays / lanes_n {
            for k in 0..per_play {
                for lane in 0..lanes_n {
                    let play = round * lanes_n + lane;
                    let message = if play == plays - 1 {
                        format!("distinct {k}")
                    } else {
                        format!("busy {}", play % 3)
                    };
                    let key = RowKey {
                        play,
                        tree: "t",
                        agent: "root",
                        copy: 0,
                        lane: Some(lane),
                    };
                    let error = ErrorRef {
                        category: "http_status",
                        message: &message,
                    };
                    builder.push(key, turn_at(request, request), Some(error));
                    request += 1;
                }
            }
        }
        let lanes = builder.finish();
        let kept = lanes.request.len() as u64;
        assert!(kept <= 2 * MAX_LANE_TURNS as u64, "{kept}");
        assert_eq!(kept + lanes.left_out, u64::from(plays) * per_play);
        // Whole plays: every kept row has all its play's turns.
        for r in 0..lanes.rows.len() {
            assert_eq!(lanes.row_start[r + 1] - lanes.row_start[r], per_play as u32);
        }
        assert_eq!(lanes.rows.len() as u64 * per_play, kept);
        assert_eq!(kept, MAX_LANE_TURNS as u64, "the first plays, whole");
        assert_eq!(lanes.errors.len(), 3, "one text per distinct message");

        let mut builder = LaneBuilder::default();
        for i in 0..2 * MAX_ERROR_TEXTS as u64 {
            let message = format!("request {i} failed");
            let key = RowKey {
                play: i as u32,
                tree: "t",
                agent: "root",
                copy: 0,
                lane: None,
            };
            let error = ErrorRef {
                category: "timeout",
                message: &message,
            };
            builder.push(key, turn_at(i, i), Some(error));
        }
        let lanes = builder.finish();
        assert_eq!(lanes.errors.len(), MAX_ERROR_TEXTS + 1);
        assert!(lanes.errors[MAX_ERROR_TEXTS]
            .message
            .starts_with("(not kept"));
        assert_eq!(lanes.error.iter().max(), Some(&(MAX_ERROR_TEXTS as i64)));
    }
}
