//! A running run's `records.jsonl`, read back while the driver writes it:
//! what a live display shows of the requests done so far (their latency
//! percentiles, output tokens, errors by class with the latest message,
//! each tree's plays).
//!
//! Owns reading the file's new lines within a budget ([`BYTES_PER_READ`],
//! [`LINES_PER_READ`] each [`RecordsWatch::read`]) and adding them up with
//! the summary's own [`Collector`], so that a figure here is the
//! summary's over the records read. The driver does nothing for it: the
//! records are the lines it writes anyway (a loop turn's records in one
//! write), read on the caller's thread at the caller's pace. When more is
//! new than the budget, the oldest new lines are skipped unread and the
//! figures are over a sample ([`Watched::sampled`]): a display costs a
//! bounded amount of CPU however fast the server answers. Writes nothing;
//! a line it cannot read is counted ([`Watched::unreadable`]), never an
//! error.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use crate::collector::{Collector, SoFar};
use crate::journal::RunStart;
use crate::record::in_words;
use crate::record_line::RecordLine;

/// The most new bytes one read takes from the file; the older new bytes
/// are skipped.
pub const BYTES_PER_READ: u64 = 128 * 1024;

/// The most new lines one read adds up; the older new lines are skipped.
pub const LINES_PER_READ: usize = 200;

/// A line longer than this (never written by arbor) is dropped unread.
const LONGEST_LINE: usize = 16 << 20;

/// One tree's plays, as the records read say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeProgress {
    /// `tree_index` of the records.
    pub index: u32,
    /// The tree's id (`tree` of its records).
    pub name: String,
    /// Turns of one play of the tree.
    pub turns: u32,
    /// Plays with a record of every turn.
    pub plays_done: u64,
    /// Plays with some of their records and not all.
    pub plays_running: u64,
    /// Records of the running plays: turns done of `plays_running *
    /// turns`.
    pub turns_done_running: u64,
}

/// What the records read so far say.
#[derive(Debug, Clone, PartialEq)]
pub struct Watched {
    /// The summary's figures over the records read.
    pub so_far: SoFar,
    /// Per error class: the latest failure's status and message, in words
    /// ([`in_words`]).
    pub latest_errors: BTreeMap<String, String>,
    /// The trees with a record read, by index.
    pub trees: Vec<TreeProgress>,
    /// Records read and added up.
    pub records: u64,
    /// Lines that were not a record (counted, left out).
    pub unreadable: u64,
    /// Some new lines were skipped unread (more came than the budget):
    /// the figures are over a sample of the records.
    pub sampled: bool,
}

/// A play begun and not yet whole.
#[derive(Debug, Clone, Copy)]
struct OpenPlay {
    tree: u32,
    records: u32,
}

/// Reads a run's records as they are written.
pub struct RecordsWatch {
    path: PathBuf,
    file: Option<File>,
    /// Bytes of the file taken so far (read or skipped).
    offset: u64,
    /// The start of a line whose end is not written yet.
    partial: Vec<u8>,
    /// After a skip: the bytes up to the next newline end a line whose
    /// start was not read.
    mid_line: bool,
    collector: Collector,
    /// One buffer for every line's gaps.
    itl: Vec<f64>,
    tree_turns: Vec<u32>,
    names: BTreeMap<u32, String>,
    plays_done: BTreeMap<u32, u64>,
    open: BTreeMap<u32, OpenPlay>,
    latest_errors: BTreeMap<String, String>,
    records: u64,
    unreadable: u64,
    sampled: bool,
}

impl RecordsWatch {
    /// A watch of `path` (a run's `records.jsonl`) adding up as the run
    /// `start` describes (its warmups, window and trees).
    pub fn of_run(path: PathBuf, start: &RunStart) -> RecordsWatch {
        let collector = Collector::with_warmups(start.warmups.clone(), start.window_start_ns);
        RecordsWatch::new(path, collector, start.tree_turns.clone())
    }

    /// A watch of `path` adding up into `collector`, whose trees have
    /// `tree_turns` turns each (by `tree_index`).
    pub fn new(path: PathBuf, collector: Collector, tree_turns: Vec<u32>) -> RecordsWatch {
        RecordsWatch {
            path,
            file: None,
            offset: 0,
            partial: Vec::new(),
            mid_line: false,
            collector: collector.with_tree_turns(tree_turns.clone()),
            itl: Vec::new(),
            tree_turns,
            names: BTreeMap::new(),
            plays_done: BTreeMap::new(),
            open: BTreeMap::new(),
            latest_errors: BTreeMap::new(),
            records: 0,
            unreadable: 0,
            sampled: false,
        }
    }

    /// Reads what was written since the last read, within the budget. A
    /// file not there yet, or unreadable now, is tried again next time.
    pub fn read(&mut self) {
        let Some(bytes) = self.new_bytes() else {
            return;
        };
        let mut text = std::mem::take(&mut self.partial);
        text.extend_from_slice(&bytes);
        let mut start = 0;
        if self.mid_line {
            match text.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    start = end + 1;
                    self.mid_line = false;
                }
                None => return,
            }
        }
        let end = match text.iter().rposition(|&b| b == b'\n') {
            Some(end) if end >= start => end + 1,
            _ => {
                self.keep_partial(&text[start..]);
                return;
            }
        };
        let lines: Vec<&[u8]> = text[start..end]
            .split(|&b| b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .collect();
        let skip = lines.len().saturating_sub(LINES_PER_READ);
        if skip > 0 {
            self.sampled = true;
        }
        for line in &lines[skip..] {
            self.add(line);
        }
        self.keep_partial(&text[end..]);
    }

    /// What the records read so far say.
    pub fn watched(&mut self) -> Watched {
        let mut trees: BTreeMap<u32, TreeProgress> = BTreeMap::new();
        let tree = |index: u32| TreeProgress {
            index,
            name: self.names.get(&index).cloned().unwrap_or_default(),
            turns: self.tree_turns.get(index as usize).copied().unwrap_or(0),
            plays_done: self.plays_done.get(&index).copied().unwrap_or(0),
            plays_running: 0,
            turns_done_running: 0,
        };
        for &index in self.names.keys() {
            trees.insert(index, tree(index));
        }
        for play in self.open.values() {
            let row = trees.entry(play.tree).or_insert_with(|| tree(play.tree));
            row.plays_running += 1;
            row.turns_done_running += u64::from(play.records);
        }
        Watched {
            so_far: self.collector.so_far(),
            latest_errors: self.latest_errors.clone(),
            trees: trees.into_values().collect(),
            records: self.records,
            unreadable: self.unreadable,
            sampled: self.sampled,
        }
    }

    /// The bytes written since the last read: at most [`BYTES_PER_READ`],
    /// the newest (older ones are skipped, and the line they cut is
    /// dropped). `None` when there is nothing new or the file cannot be
    /// read now.
    fn new_bytes(&mut self) -> Option<Vec<u8>> {
        if self.file.is_none() {
            self.file = File::open(&self.path).ok();
        }
        let file = self.file.as_mut()?;
        let len = file.metadata().ok()?.len();
        if len <= self.offset {
            return None;
        }
        if len - self.offset > BYTES_PER_READ {
            self.offset = len - BYTES_PER_READ;
            self.partial.clear();
            self.mid_line = true;
            self.sampled = true;
        }
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut bytes = Vec::new();
        let read = file
            .take(len - self.offset)
            .read_to_end(&mut bytes)
            .unwrap_or(0);
        bytes.truncate(read);
        self.offset += read as u64;
        Some(bytes)
    }

    /// Keeps the start of an unfinished line for the next read (dropped,
    /// with the rest of its line, past [`LONGEST_LINE`]).
    fn keep_partial(&mut self, rest: &[u8]) {
        if rest.len() > LONGEST_LINE {
            self.partial.clear();
            self.mid_line = true;
            self.unreadable += 1;
        } else {
            self.partial = rest.to_vec();
        }
    }

    /// Adds one line up (or counts it unreadable).
    fn add(&mut self, line: &[u8]) {
        match self.add_record(line) {
            Ok(()) => self.records += 1,
            Err(_) => self.unreadable += 1,
        }
    }

    /// Adds one record up; why the line is not one.
    fn add_record(&mut self, line: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(line).map_err(|e| e.to_string())?;
        let line = RecordLine::parse(text)?;
        line.itl_s.read_into(&mut self.itl)?;
        let facts = line.facts(&self.itl)?;
        self.collector.add(&facts);
        if let (Some(category), Some(seen)) = (facts.error_category, facts.error) {
            self.latest_errors.insert(
                category.as_str().to_string(),
                in_words(seen.http_status, seen.message),
            );
        }
        if facts.warmup {
            return Ok(());
        }
        let (tree, play) = (facts.tree_index, facts.play);
        self.names
            .entry(tree)
            .or_insert_with(|| line.tree.as_deref().unwrap_or("?").to_string());
        self.played(tree, play);
        Ok(())
    }

    /// One more record of `play` (of tree `tree`): a play with a record
    /// of each of its tree's turns is done.
    fn played(&mut self, tree: u32, play: u32) {
        let open = self
            .open
            .entry(play)
            .or_insert(OpenPlay { tree, records: 0 });
        open.records += 1;
        let turns = self.tree_turns.get(tree as usize).copied().unwrap_or(0);
        if turns > 0 && open.records >= turns {
            self.open.remove(&play);
            *self.plays_done.entry(tree).or_insert(0) += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{read_json, RUN_FILE, RUN_SCHEMA};
    use crate::output::Summary;
    use std::io::Write;
    use std::path::Path;

    fn small() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small")
    }

    fn lines() -> Vec<String> {
        let text = std::fs::read_to_string(small().join("records.jsonl")).unwrap();
        text.lines().map(|l| format!("{l}\n")).collect()
    }

    /// A watch of a fresh file in a scratch directory, and the file.
    fn watch_of(name: &str) -> (RecordsWatch, File) {
        let dir = std::env::temp_dir().join(format!("arbor-watch-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("records.jsonl");
        let file = File::create(&path).unwrap();
        let start: RunStart = read_json(&small().join(RUN_FILE), RUN_SCHEMA).unwrap();
        (RecordsWatch::of_run(path, &start), file)
    }

    #[test]
    fn the_records_read_add_up_to_the_summarys_figures() {
        let (mut watch, mut file) = watch_of("summary");
        let all = lines().concat();
        // Written in three pieces cut mid-line, read after each.
        let cuts = [0, 700, all.len() / 2 + 13, all.len()];
        for piece in cuts.windows(2) {
            file.write_all(&all.as_bytes()[piece[0]..piece[1]]).unwrap();
            watch.read();
        }
        let seen = watch.watched();
        let summary: Summary =
            serde_json::from_slice(&std::fs::read(small().join("summary.json")).unwrap()).unwrap();
        assert_eq!(seen.records, 15);
        assert_eq!((seen.unreadable, seen.sampled), (0, false));
        assert_eq!(seen.so_far.ttft, summary.latency.ttft);
        assert_eq!(seen.so_far.itl, summary.latency.itl);
        assert_eq!(seen.so_far.e2e, summary.latency.e2e);
        assert_eq!(seen.so_far.requests.ok, summary.counts.ok);
        assert_eq!(
            seen.so_far.output_tokens,
            summary.throughput.work.output_tokens
        );
        // Three trees of 6, 7 and 2 turns, one play each, all done.
        let plays: Vec<(u32, u32, u64, u64)> = seen
            .trees
            .iter()
            .map(|t| (t.index, t.turns, t.plays_done, t.plays_running))
            .collect();
        assert_eq!(plays, [(0, 6, 1, 0), (1, 7, 1, 0), (2, 2, 1, 0)]);
        assert_eq!(seen.trees[0].name, "t0");
    }

    #[test]
    fn a_play_is_running_until_its_every_turn_is_read() {
        let (mut watch, mut file) = watch_of("plays");
        // The first three records are three turns of tree t0 (6 turns).
        for line in &lines()[..3] {
            file.write_all(line.as_bytes()).unwrap();
        }
        watch.read();
        let t0 = &watch.watched().trees[0];
        assert_eq!((t0.plays_done, t0.plays_running), (0, 1));
        assert_eq!(t0.turns_done_running, 3);
    }

    #[test]
    fn errors_keep_the_latest_message_and_bad_lines_are_counted() {
        let (mut watch, mut file) = watch_of("errors");
        let ok = lines()[0].clone();
        let failed = |message: &str| {
            ok.replace("\"status\":\"ok\"", "\"status\":\"error\"")
                .replace(
                    "\"error\":null",
                    &format!(
                    "\"error\":{{\"category\":\"http_status\",\"message\":{},\"http_status\":503}}",
                    serde_json::to_string(message).unwrap()
                ),
                )
        };
        file.write_all(failed("first").as_bytes()).unwrap();
        file.write_all(b"not a record\n\n").unwrap();
        file.write_all(failed(r#"{"error":{"message":"busy, try later"}}"#).as_bytes())
            .unwrap();
        watch.read();
        let seen = watch.watched();
        assert_eq!((seen.records, seen.unreadable), (2, 1));
        assert_eq!(seen.so_far.errors.get("http_status"), Some(&2));
        assert_eq!(
            seen.latest_errors.get("http_status").map(String::as_str),
            Some("HTTP 503: busy, try later")
        );
    }

    #[test]
    fn past_the_budget_the_newest_lines_are_read_and_the_figures_are_a_sample() {
        let (mut watch, mut file) = watch_of("budget");
        // A record with only what the summary needs, so that more lines
        // than one read adds up fit in the bytes it takes.
        let mut short: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&lines()[0]).unwrap();
        for optional in [
            "eligible_s",
            "headers_s",
            "first_byte_s",
            "tpot_s",
            "attempts",
            "lane",
            "copy",
            "lateness_s",
            "cached_tokens",
            "http_status",
            "resends",
        ] {
            short.remove(optional);
        }
        let short = format!("{}\n", serde_json::to_string(&short).unwrap());
        // More lines than a read adds up, all within its bytes.
        let many = (BYTES_PER_READ as usize / short.len() - 1).min(LINES_PER_READ + 100);
        assert!(many > LINES_PER_READ, "{} bytes a line", short.len());
        for _ in 0..many {
            file.write_all(short.as_bytes()).unwrap();
        }
        watch.read();
        let seen = watch.watched();
        assert_eq!(seen.records, LINES_PER_READ as u64);
        assert!(seen.sampled);
        let line = lines()[0].clone();
        // More bytes than one read takes: the oldest are skipped, and the
        // line they cut is dropped, not misread.
        let (mut watch, mut file) = watch_of("bytes");
        let lines_in_budget = BYTES_PER_READ as usize / line.len();
        for _ in 0..3 * lines_in_budget {
            file.write_all(line.as_bytes()).unwrap();
        }
        watch.read();
        let seen = watch.watched();
        assert_eq!(seen.unreadable, 0);
        assert!(seen.sampled);
        assert!(
            seen.records > 0 && seen.records <= lines_in_budget as u64,
            "{}",
            seen.records
        );
    }

    #[test]
    fn a_missing_file_reads_as_nothing_yet() {
        let start: RunStart = read_json(&small().join(RUN_FILE), RUN_SCHEMA).unwrap();
        let mut watch = RecordsWatch::of_run(PathBuf::from("/nonexistent/records.jsonl"), &start);
        watch.read();
        let seen = watch.watched();
        assert_eq!((seen.records, seen.unreadable), (0, 0));
        assert!(seen.trees.is_empty());
    }
}
