//! `capacity.json` read back as the page needs it: the SLOs, the knob,
//! the answer, why a search stopped, and every probe's verdict (its
//! bounds' readings, goodput and counts), each probe in agents and jobs
//! per hour, the answer in agents and the Pareto (all three absent from
//! an older file: `None`). Owns the file's shape on the
//! reading side only, with types of its own (the search writes with
//! `arbor_capacity::output`'s): a file of schema `arbor.capacity/1` from
//! any arbor version with these fields reads the same. A file that is
//! missing, not JSON, of another schema or short of a field is bad input
//! that names the file and what was expected.

use std::path::Path;

use serde::{Deserialize, Serialize};

use arbor_error::Error;

/// The file a capacity search writes into its directory.
pub const CAPACITY_FILE: &str = "capacity.json";
/// The schema this page reads.
const SCHEMA_VERSION: &str = "arbor.capacity/1";

/// One capacity search as its `capacity.json` holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct Search {
    #[serde(default)]
    pub arbor_version: Option<String>,
    pub mode: Mode,
    /// False: a probe stopped the search before its answer.
    pub complete: bool,
    pub stopped: Option<Stopped>,
    /// The SLOs as given (`ttft_p99<=2s,e2e_p99<=30s`).
    pub slo: String,
    /// A point passes on goodput at least this share, when set.
    pub goodput_threshold: Option<f64>,
    pub knob: Knob,
    pub range: [f64; 2],
    pub step: f64,
    /// The service model of the virtual points (and of a live search's
    /// prediction).
    pub service: String,
    /// A live search's start: the virtual knee it bisected around.
    pub predicted: Option<Answer>,
    pub answer: Answer,
    /// In the order probed.
    pub probes: Vec<Probe>,
    /// The answer in agents: the passing load's figures (absent in a
    /// file of an arbor before them).
    #[serde(default)]
    pub answer_in_agents: Option<Held>,
    /// Jobs/h per replica against jobs/h per user (absent before them).
    #[serde(default)]
    pub pareto: Option<Pareto>,
}

/// A point in agents and jobs per hour (`arbor_capacity::agents`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Agents {
    pub window_s: f64,
    /// Trees (a top-level agent's job with its subagents) in flight.
    pub trees_mean: f64,
    pub trees_peak: u64,
    /// Agents in flight counting subagents.
    pub agents_mean: f64,
    pub agents_peak: u64,
    pub jobs: u64,
    pub jobs_per_hour: Option<f64>,
    /// Jobs per hour meeting every job bound.
    pub good_jobs_per_hour: Option<f64>,
    pub job_time_mean_s: Option<f64>,
    pub jobs_per_hour_per_user: Option<f64>,
}

/// The answer in agents: the largest passing load and its figures.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Held {
    pub load: f64,
    #[serde(flatten)]
    pub agents: Agents,
}

/// The Pareto over the probes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Pareto {
    pub replicas: usize,
    pub points: Vec<ParetoPoint>,
}

/// One load on the Pareto.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ParetoPoint {
    pub probe: usize,
    pub load: f64,
    pub jobs_per_hour_per_replica: f64,
    pub jobs_per_hour_per_user: f64,
    pub pass: bool,
    pub dominated: bool,
}

/// How the points were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Plans on the virtual clock.
    Virtual,
    /// Real runs.
    Live,
}

/// What the search turned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// Closed-loop lanes.
    Sessions,
    /// Open-loop trees per second.
    Rate,
}

/// The knee, in the knob's unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
pub struct Answer {
    /// The largest load that passed.
    pub passing: Option<f64>,
    /// The smallest load above it that failed.
    pub failing: Option<f64>,
    /// A point, or only a bound (a live probe left unresolved); a file
    /// from before answers had kinds is a point.
    #[serde(default)]
    pub kind: AnswerKind,
    /// The confirmation run at `passing`, when one was made.
    #[serde(default)]
    pub confirmation: Option<Confirmation>,
}

/// What kind of answer a search gave (`answer.kind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    #[default]
    Point,
    LowerBound,
    UpperBound,
    Bracket,
    Unresolved,
}

/// The passing load measured once more after a live search.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
pub struct Confirmation {
    pub probe: usize,
    pub load: f64,
    pub decision: Decision,
    /// It passed again; otherwise the answer was downgraded to a bound.
    pub held: bool,
}

/// A live probe's verdict on its 95 % intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Pass,
    Fail,
    Unresolved,
}

/// A live probe's 95 % interval of a bound's percentile: the readings at
/// two ranks, `None` for an end too few observations reach.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Confidence {
    pub lo: Option<Reading>,
    pub hi: Option<Reading>,
    pub ranks: [u64; 2],
    pub of: u64,
}

/// Why a search ended before its answer, at which probe.
#[derive(Debug, Clone, Deserialize)]
pub struct Stopped {
    pub probe: usize,
    pub load: f64,
    pub cause: Cause,
    pub message: String,
}

/// What stopped a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The probe's run failed: it has no verdict.
    Failed,
    /// Too few of its requests succeeded to decide.
    TooSmall,
    /// Its 95 % intervals reached across a limit.
    #[serde(other)]
    Unresolved,
}

/// One probed point and its verdict.
#[derive(Debug, Clone, Deserialize)]
pub struct Probe {
    /// 1-based, in the order probed.
    pub probe: usize,
    pub load: f64,
    /// Its directory, relative to the search's.
    pub dir: String,
    pub bounds: Vec<Bound>,
    pub request_goodput: Option<f64>,
    pub job_goodput: Option<f64>,
    pub requests: u64,
    pub failed: u64,
    pub measured: u64,
    pub jobs: u64,
    pub too_small: bool,
    pub pass: bool,
    /// The point in agents and jobs (absent before them).
    #[serde(default)]
    pub agents: Option<Agents>,
    /// Pass, fail or unresolved (on its intervals, for a live probe);
    /// absent from files before verdicts had intervals.
    #[serde(default)]
    pub decision: Option<Decision>,
    /// The directories of its extensions, pooled with it.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// The confirmation run at the answer.
    #[serde(default)]
    pub confirmation: bool,
}

/// One SLO bound judged at one point.
#[derive(Debug, Clone, Deserialize)]
pub struct Bound {
    /// `ttft_p99`.
    pub metric: String,
    pub limit_ns: u64,
    pub reading: Reading,
    pub pass: bool,
    /// The reading's interval (virtual probes under the server model).
    #[serde(default)]
    pub interval: Option<ReadingInterval>,
    /// A live probe's 95 % interval of the percentile.
    #[serde(default)]
    pub confidence: Option<Confidence>,
}

/// A reading's interval, in nanoseconds (`hi_ns` null: the upper end
/// falls on a failed request).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ReadingInterval {
    pub lo_ns: u64,
    pub hi_ns: Option<u64>,
    pub level: f64,
    pub fit_known: bool,
}

/// A bound's percentile at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "ns")]
pub enum Reading {
    Value(u64),
    /// The percentile falls on a failed request.
    Failed,
    /// Nothing to measure.
    Missing,
}

/// Reads `path` (a `capacity.json`).
pub fn read(path: &Path) -> Result<Search, Error> {
    let text = arbor_runs::file_cap::read_to_string(path)
        .map_err(|e| Error::input(format!("{}: cannot read ({e})", path.display())))?;
    parse(&text, path)
}

/// `text`, the content of `path`.
pub fn parse(text: &str, path: &Path) -> Result<Search, Error> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::input(format!("{}: not JSON: {e}", path.display())))?;
    match value.get("schema_version").and_then(|v| v.as_str()) {
        Some(SCHEMA_VERSION) => {}
        other => {
            return Err(Error::input(format!(
                "{}: schema_version {}: expected \"{SCHEMA_VERSION}\" (the file `arbor capacity` writes)",
                path.display(),
                other.map_or("missing".to_string(), |s| format!("\"{s}\""))
            )))
        }
    }
    serde_json::from_value(value).map_err(|e| {
        Error::input(format!(
            "{}: not a capacity search's result: {e}",
            path.display()
        ))
    })
}

/// `throughput.output_tokens_per_s` of the `summary.json` in `probe_dir`
/// (a run's, or a virtual probe's): `None` when the probe wrote none (a
/// run that stopped before its summary); a summary that cannot be read
/// is bad input naming it.
pub fn output_tokens_per_s(probe_dir: &Path) -> Result<Option<f64>, Error> {
    let path = probe_dir.join("summary.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = arbor_runs::file_cap::read_to_string(&path)
        .map_err(|e| Error::input(format!("{}: cannot read ({e})", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not JSON: {e}", path.display())))?;
    Ok(value
        .pointer("/throughput/output_tokens_per_s")
        .and_then(serde_json::Value::as_f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"schema_version":"arbor.capacity/1","mode":"virtual","complete":true,
      "stopped":null,"slo":"ttft_p99<=1s","goodput_threshold":null,"knob":"sessions",
      "range":[1,4],"step":1,"service":"fixed:10:1","predicted":null,
      "answer":{"passing":2,"failing":3},
      "probes":[{"probe":1,"load":2,"dir":"probe-1-sessions-2","bounds":[{"metric":"ttft_p99",
        "limit_ns":1000000000,"reading":{"kind":"value","ns":5},"pass":true}],
        "request_goodput":1.0,"job_goodput":null,"requests":3,"failed":0,"measured":3,"jobs":1,
        "too_small":false,"pass":true},
       {"probe":2,"load":3,"dir":"probe-2-sessions-3","bounds":[{"metric":"ttft_p99",
        "limit_ns":1000000000,"reading":{"kind":"failed"},"pass":false}],
        "request_goodput":0.5,"job_goodput":null,"requests":4,"failed":2,"measured":2,"jobs":0,
        "too_small":false,"pass":false}]}"#;

    #[test]
    fn a_search_reads_with_its_readings() {
        let s = parse(ONE, Path::new("c.json")).unwrap();
        assert_eq!(s.knob, Knob::Sessions);
        assert_eq!(s.mode, Mode::Virtual);
        assert_eq!(s.answer.passing, Some(2.0));
        assert_eq!(s.probes[0].bounds[0].reading, Reading::Value(5));
        assert_eq!(s.probes[1].bounds[0].reading, Reading::Failed);
    }

    #[test]
    fn agents_and_the_pareto_read_when_there_and_are_none_before_them() {
        let s = parse(ONE, Path::new("c.json")).unwrap();
        assert_eq!(
            (s.answer_in_agents.as_ref(), s.pareto.as_ref()),
            (None, None)
        );
        assert_eq!(s.probes[0].agents, None);
        let with = ONE
            .replacen(
                r#""too_small":false,"pass":true}"#,
                r#""too_small":false,"pass":true,"agents":{"window_s":2,"trees_mean":1.5,
                  "trees_peak":2,"agents_mean":2.5,"agents_peak":4,"jobs":3,"jobs_per_hour":5400,
                  "good_jobs_per_hour":3600,"job_time_mean_s":1,"jobs_per_hour_per_user":3600}}"#,
                1,
            )
            .replace(
                r#""probes":["#,
                r#""answer_in_agents":{"load":2,"window_s":2,"trees_mean":1.5,"trees_peak":2,
                  "agents_mean":2.5,"agents_peak":4,"jobs":3,"jobs_per_hour":5400,
                  "good_jobs_per_hour":3600,"job_time_mean_s":1,"jobs_per_hour_per_user":3600},
                  "pareto":{"replicas":1,"points":[{"probe":1,"load":2,
                  "jobs_per_hour_per_replica":5400,"jobs_per_hour_per_user":3600,"pass":true,
                  "dominated":false}]},"probes":["#,
            );
        let s = parse(&with, Path::new("c.json")).unwrap();
        let agents = s.probes[0].agents.as_ref().unwrap();
        assert_eq!((agents.trees_mean, agents.agents_peak), (1.5, 4));
        let held = s.answer_in_agents.unwrap();
        assert_eq!((held.load, held.agents.jobs_per_hour), (2.0, Some(5400.0)));
        assert_eq!(s.pareto.unwrap().points[0].jobs_per_hour_per_user, 3600.0);
    }

    #[test]
    fn a_readings_interval_is_read_when_there_is_one() {
        let with = ONE.replacen(
            r#""pass":true}]"#,
            r#""pass":true,"interval":{"lo_ns":4,"hi_ns":null,"level":0.9,
              "method":"resamples (fit unknown)","fit_known":false}}]"#,
            1,
        );
        let s = parse(&with, Path::new("c.json")).unwrap();
        let i = s.probes[0].bounds[0].interval.expect("an interval");
        assert_eq!(
            (i.lo_ns, i.hi_ns, i.level, i.fit_known),
            (4, None, 0.9, false)
        );
        assert!(s.probes[1].bounds[0].interval.is_none());
    }

    #[test]
    fn another_schema_or_a_missing_field_names_the_file() {
        let other = ONE.replace("arbor.capacity/1", "arbor.summary/1");
        let e = parse(&other, Path::new("x/capacity.json")).unwrap_err();
        assert!(e.message.contains("x/capacity.json"), "{}", e.message);
        assert!(e.message.contains("\"arbor.summary/1\""), "{}", e.message);

        let short = ONE.replace("\"knob\":\"sessions\",", "");
        let e = parse(&short, Path::new("x/capacity.json")).unwrap_err();
        assert!(e.message.contains("x/capacity.json"), "{}", e.message);
        assert!(e.message.contains("missing field `knob`"), "{}", e.message);

        let e = parse("{\"schema_version\":", Path::new("x/capacity.json")).unwrap_err();
        assert!(e.message.contains("not JSON"), "{}", e.message);
    }
}
