//! Reading the run directories a calibration fits: each request as the
//! client saw it ([`Observed`]), and what the run's files say of the
//! server (`metrics.jsonl`'s `cache_config_info` labels and preemption
//! counter) and of the run
//! (`run.json`'s model and server, for the profile's label).
//!
//! Owns turning a record into the calibration's view of it (the type is
//! `request`'s); reads `records.jsonl` through `arbor_runs::record_line`,
//! the one reader of a record ([`Line`]), and `metrics.jsonl` through
//! `arbor_runs::server_metrics::line`.
//! Times become integer nanoseconds here, once; `follows` then links the
//! requests.

use std::collections::BTreeMap;
use std::path::Path;

use arbor_engine::time::secs_to_nanos;
use serde::Deserialize;

use arbor_engine::time::Nanos;
use arbor_error::Error;
use arbor_runs::earliest::Earliest;
use arbor_runs::record::Status;
use arbor_runs::record_line::{self, need, RecordLine};
use arbor_runs::records_file::RECORDS_FILE;
use arbor_runs::server_metrics::line;
use arbor_runs::server_metrics::names::Metric;

use super::request::Observed;

/// Finished requests a calibration reads of one run at most: the run's
/// first stretch of time by send (`arbor_runs::earliest`), whole. Far
/// more than the fit needs for its rows, and it bounds the memory and
/// the replays (stage B replays every request read dozens of times)
/// however long the run was: a 3-million-request run took over 4.7 GB
/// and over 400 s of CPU before (stopped there).
pub const MAX_REQUESTS: usize = 100_000;

/// One run directory, read.
#[derive(Debug, Clone)]
pub struct Run {
    /// The directory's own name, for tables and the profile's label.
    pub name: String,
    /// Finished requests (status ok), in the file's order.
    pub requests: Vec<Observed>,
    /// Records left out: failed, cancelled, or without the stamps a fit
    /// needs.
    pub skipped: u64,
    /// Finished requests sent at or after `cut`, left out (more than
    /// [`MAX_REQUESTS`] finished).
    pub left_out: u64,
    /// `Some` when requests were left out: those read are every finished
    /// request sent before it.
    pub cut: Option<Nanos>,
    /// `cache_config_info` labels the server's metrics carried (vLLM:
    /// `block_size`, `num_gpu_blocks`), by label.
    pub engine_labels: BTreeMap<String, u32>,
    /// Preemptions the server counted during the run (its scraped
    /// preemption counter's last value less its first), when it exposed
    /// one.
    pub preemptions: Option<f64>,
    /// `run.json`'s model, when it named one.
    pub model: Option<String>,
    /// What served the run: `the built-in emulator (FLAGS)`, or
    /// `run.json`'s endpoint (redacted).
    pub server: Option<String>,
}

/// A records line, as the one reader reads it.
type Line<'a> = RecordLine<'a>;

/// The fields of a records line the calibration cannot do without.
fn check(line: &Line) -> Result<(), String> {
    need(line.tree_index, "tree_index")?;
    need(line.agent.as_ref(), "agent")?;
    need(line.copy, "copy")?;
    need(line.play, "play")?;
    need(line.warmup, "warmup")?;
    need(line.input_tokens, "input_tokens")?;
    need(line.output_tokens, "output_tokens")?;
    line.itl_s.values().map(drop)
}

/// The parts of `run.json` a label names.
#[derive(Debug, Default, Deserialize)]
struct RunJson {
    #[serde(default)]
    config: RunJsonConfig,
}

#[derive(Debug, Default, Deserialize)]
struct RunJsonConfig {
    model: Option<String>,
    endpoint: Option<String>,
    emulator: Option<String>,
}

/// Reads `dir`: its records (required), `run.json` and `metrics.jsonl`
/// when present.
pub fn read(dir: &Path) -> Result<Run, Error> {
    read_at_most(dir, MAX_REQUESTS)
}

/// [`read`], keeping at most `cap` finished requests.
fn read_at_most(dir: &Path, cap: usize) -> Result<Run, Error> {
    let mut earliest = Earliest::new(cap);
    let mut skipped = 0u64;
    record_line::read(&dir.join(RECORDS_FILE), |line, _| {
        check(line)?;
        match observed(line) {
            Some(o) => earliest.add(o.sent, o),
            None => skipped += 1,
        }
        Ok(())
    })?;
    let kept = earliest.finish();
    let mut requests = kept.items;
    let run_json: RunJson = match arbor_runs::file_cap::read_to_string(&dir.join("run.json")) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::input(format!(
                "{}: not the run.json of `arbor run`: {e}",
                dir.join("run.json").display()
            ))
        })?,
        Err(_) => RunJson::default(),
    };
    let mut engine_labels = BTreeMap::new();
    let mut preemption_counter: Option<(f64, f64)> = None;
    line::read(dir, |l| {
        if l.name.ends_with("cache_config_info") {
            for (key, value) in &l.labels {
                if let Ok(v) = value.trim().parse::<u32>() {
                    engine_labels.insert(key.clone(), v);
                }
            }
        }
        if l.metric.as_deref() == Some(Metric::Preemptions.name()) {
            let first = preemption_counter.map_or(l.value, |(first, _)| first);
            preemption_counter = Some((first, l.value));
        }
    })?;
    super::follows::link(&mut requests);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    Ok(Run {
        name,
        requests,
        skipped,
        left_out: kept.left_out,
        cut: kept.cut,
        engine_labels,
        preemptions: preemption_counter.map(|(first, last)| (last - first).max(0.0)),
        server: match (run_json.config.emulator, run_json.config.endpoint) {
            (Some(flags), _) => Some(format!("the built-in emulator ({flags})")),
            (None, endpoint) => endpoint,
        },
        model: run_json.config.model,
    })
}

/// A record as a finished request, or `None` when it did not finish or
/// lacks a stamp (or a field [`check`] needs).
fn observed(line: &Line) -> Option<Observed> {
    let (output_tokens, play) = (line.output_tokens?, line.play?);
    if line.status != Status::Ok || output_tokens == 0 {
        return None;
    }
    let sent = secs_to_nanos(line.sent_s?)?;
    let first = secs_to_nanos(line.first_content_s?)?.max(sent);
    let done = secs_to_nanos(line.done_s?)?.max(first);
    let osl = u32::try_from(output_tokens).ok()?;
    let isl = u32::try_from(line.input_tokens?).ok()?;
    let itl = line.itl_s.values().ok()?;
    let content = if itl.len() + 1 == osl as usize {
        let mut at = first;
        let mut stamps = Vec::with_capacity(osl as usize);
        stamps.push(at);
        for gap in &itl {
            at = at.saturating_add(secs_to_nanos(*gap)?).min(done);
            stamps.push(at);
        }
        stamps
    } else {
        Vec::new()
    };
    Some(Observed {
        chain: chain_key(line.tree_index?, line.copy?, play, line.agent.as_deref()?),
        warmup: line.warmup?,
        sent,
        first,
        done,
        content,
        isl,
        osl,
        cached: line
            .cached_tokens
            .and_then(|c| u32::try_from(c).ok())
            .map(|c| c.min(isl)),
        thread: match line.lane {
            Some(lane) => u64::from(lane),
            None => 1 << 32 | u64::from(play),
        },
        after: None,
    })
}

/// FNV-1a over the fields that name a conversation: the same on every
/// machine and every run.
pub fn chain_key(tree_index: u32, copy: u32, play: u32, agent: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(&tree_index.to_le_bytes());
    eat(&copy.to_le_bytes());
    eat(&play.to_le_bytes());
    eat(agent.as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str) -> Line<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_run_of_more_requests_than_the_cap_is_read_as_its_first_stretch() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/calibrate/two-sessions");
        let whole = read(&dir).unwrap();
        assert_eq!((whole.cut, whole.left_out), (None, 0));
        let n = whole.requests.len();
        assert!(n > 4, "{n} requests");
        let first = read_at_most(&dir, 4).unwrap();
        let cut = first.cut.expect("requests left out");
        assert!(first.requests.len() <= 4);
        let before: Vec<&Observed> = whole.requests.iter().filter(|r| r.sent < cut).collect();
        assert_eq!(
            first.requests.len(),
            before.len(),
            "every request before the cut"
        );
        assert_eq!(first.left_out as usize, n - before.len());
        // Linked among themselves: a kept request follows a kept one.
        assert!(first
            .requests
            .iter()
            .filter_map(|r| r.after)
            .all(|a| a.request < first.requests.len()));
    }

    const BASE: &str = r#"{"tree_index":0,"agent":"a","copy":0,"play":1,"warmup":false,
        "status":"ok","sent_s":1.0,"first_content_s":1.5,"done_s":2.5,
        "itl_s":[0.25,0.25,0.5],"input_tokens":100,"output_tokens":4,"cached_tokens":64}"#;

    #[test]
    fn a_record_becomes_integer_stamps() {
        let Some(o) = observed(&line(BASE)) else {
            panic!("an ok record is observed")
        };
        assert_eq!(
            (o.sent, o.first, o.done),
            (1_000_000_000, 1_500_000_000, 2_500_000_000)
        );
        assert_eq!(
            o.content,
            [1_500_000_000, 1_750_000_000, 2_000_000_000, 2_500_000_000]
        );
        assert_eq!(o.ttft(), 500_000_000);
        assert_eq!(o.cached, Some(64));
    }

    #[test]
    fn coarse_chunks_spread_tokens_evenly_and_failures_are_skipped() {
        let coarse = BASE.replace("[0.25,0.25,0.5]", "[1.0]");
        let Some(o) = observed(&line(&coarse)) else {
            panic!("observed")
        };
        assert!(o.content.is_empty());
        assert!(observed(&line(&BASE.replace("\"ok\"", "\"error\""))).is_none());
        assert!(observed(&line(&BASE.replace("\"sent_s\":1.0", "\"sent_s\":null"))).is_none());
    }

    #[test]
    fn chains_name_a_conversation() {
        assert_eq!(chain_key(1, 0, 2, "a"), chain_key(1, 0, 2, "a"));
        assert_ne!(chain_key(1, 0, 2, "a"), chain_key(1, 0, 3, "a"));
        assert_ne!(chain_key(1, 0, 2, "a"), chain_key(1, 0, 2, "b"));
    }
}
