//! Whether runs can be compared, and how their configurations differ.
//!
//! BASE and each NEW run are comparable when they played the same workload
//! under the same policy: their `config.workload_hash` and
//! `config.policy_hash` (`arbor_runs::identity`) are equal. A run made
//! before the hashes were recorded is judged by what its configuration
//! says instead: the workload's settings (`inputs`, `format`, `synthetic`,
//! `corpus`, `fit`) and every `policy` setting must be equal. Runs that
//! are not comparable are refused (an input error, exit 2) unless
//! `--allow-different`; then the difference leads the output.
//!
//! Owns which settings are listed as differences (the workload's, the
//! policy's, and the setup's: seed, server, model, client; never the
//! output directory, and not the built-in emulator's port) and the words
//! of a mismatch. Pure: reads two `RunConfig`s. See docs/compare.md,
//! "Comparable runs".

use arbor_error::Error;
use arbor_runs::config::RunConfig;
use serde::Serialize;
use serde_json::{json, Value};

/// What a setting belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// What was played: must be the same.
    Workload,
    /// How it was played: must be the same.
    Policy,
    /// Where and with what it was played (the server, the model, the
    /// client, the seed, arbor's version): listed, never refused.
    Setup,
}

/// One setting that differs between BASE and a NEW run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// The NEW run, as given.
    pub run: String,
    pub part: Part,
    /// Its name in `config` (`policy.arrival`, `emulator`, ...).
    pub setting: String,
    /// Its value in BASE (`null`: not set).
    pub base: Value,
    pub new: Value,
}

/// The workload or the policy of a NEW run differs from BASE's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    /// The NEW run, as given.
    pub run: String,
    /// `workload` or `policy`.
    pub part: Part,
    /// BASE's hash; `null` when it was not recorded (then the settings
    /// decided).
    pub base_hash: Option<String>,
    pub new_hash: Option<String>,
}

/// Every NEW run checked against BASE.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Comparability {
    /// The workloads and policies that differ, NEW run by NEW run.
    pub mismatches: Vec<Mismatch>,
    /// Every setting that differs, NEW run by NEW run, in the order of
    /// [`settings`].
    pub differences: Vec<Difference>,
}

/// Checks each `(name, config)` of `news` against BASE's `base`.
pub fn check(base: &RunConfig, news: &[(&str, &RunConfig)]) -> Comparability {
    let mut out = Comparability::default();
    let base_settings = settings(base);
    for &(run, new) in news {
        let differences = differences(
            run,
            &base_settings,
            &settings(new),
            both_emulated(base, new),
        );
        for (part, base_hash, new_hash) in [
            (Part::Workload, &base.workload_hash, &new.workload_hash),
            (Part::Policy, &base.policy_hash, &new.policy_hash),
        ] {
            let differs = match (base_hash, new_hash) {
                (Some(b), Some(n)) => b != n,
                _ => differences.iter().any(|d| d.part == part),
            };
            if differs {
                out.mismatches.push(Mismatch {
                    run: run.to_string(),
                    part,
                    base_hash: base_hash.clone(),
                    new_hash: new_hash.clone(),
                });
            }
        }
        out.differences.extend(differences);
    }
    out
}

impl Comparability {
    /// No workload or policy differs.
    pub fn comparable(&self) -> bool {
        self.mismatches.is_empty()
    }

    /// One line per NEW run that differs from BASE: `BASE a and NEW b
    /// differ: the workloads differ (workload hash 1a2b3c4d5e6f vs
    /// 9f8e7d6c5b4a: inputs `...` vs `...`)`.
    pub fn describe(&self, base: &str) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        let mut runs: Vec<&str> = self.mismatches.iter().map(|m| m.run.as_str()).collect();
        runs.dedup();
        for run in runs {
            let parts: Vec<String> = self
                .mismatches
                .iter()
                .filter(|m| m.run == run)
                .map(|m| self.describe_mismatch(m))
                .collect();
            lines.push(format!(
                "BASE {base} and NEW {run} differ: {}",
                parts.join("; ")
            ));
        }
        lines
    }

    /// `Ok` when comparable or `allow_different`; otherwise the input
    /// error (exit 2) naming the runs and what differs.
    pub fn refusal(&self, base: &str, allow_different: bool) -> Result<(), Error> {
        if self.comparable() || allow_different {
            return Ok(());
        }
        Err(Error::input(format!(
            "not comparable: {}. Their figures would not measure the same thing: compare runs of one workload under one policy, or pass --allow-different to compare them anyway",
            self.describe(base).join(". ")
        )))
    }

    fn describe_mismatch(&self, m: &Mismatch) -> String {
        let (what, hash) = if m.part == Part::Workload {
            ("the workloads differ", "workload hash")
        } else {
            ("the policies differ", "policy hash")
        };
        let settings: Vec<String> = self
            .differences
            .iter()
            .filter(|d| d.run == m.run && d.part == m.part)
            .map(|d| format!("{} `{}` vs `{}`", d.setting, shown(&d.base), shown(&d.new)))
            .collect();
        let by = match (&m.base_hash, &m.new_hash) {
            (Some(b), Some(n)) => format!("{hash} {} vs {}", short(b), short(n)),
            (None, _) => format!("BASE records no {hash}, judged by its settings"),
            (_, None) => format!("NEW records no {hash}, judged by its settings"),
        };
        let detail = if settings.is_empty() {
            "in a setting the configuration does not show".to_string()
        } else {
            settings.join(", ")
        };
        format!("{what} ({by}: {detail})")
    }
}

/// A setting's value for people: a string as it is, `–` for none, any
/// other value as compact JSON.
pub fn shown(value: &Value) -> String {
    match value {
        Value::Null => "–".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The first 12 hex digits of a hash.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Both runs were served by the built-in emulator: its address (a port
/// taken for the run) says nothing.
fn both_emulated(base: &RunConfig, new: &RunConfig) -> bool {
    base.emulator.is_some() && new.emulator.is_some()
}

/// The settings compared, in the order they are listed: the workload's,
/// the policy's (each of `config.policy`), then the setup's. The output
/// directory, `--force`, where the key came from, and which run of a
/// sequence it was are never listed.
pub fn settings(c: &RunConfig) -> Vec<(String, Part, Value)> {
    let mut out: Vec<(String, Part, Value)> = Vec::new();
    let mut push = |name: &str, part, value: Value| out.push((name.to_string(), part, value));
    push("inputs", Part::Workload, json!(c.inputs));
    push("format", Part::Workload, json!(c.format));
    push("synthetic", Part::Workload, json!(c.synthetic));
    push("corpus", Part::Workload, json!(c.corpus));
    push("fit", Part::Workload, json!(c.fit));
    if let Ok(Value::Object(policy)) = serde_json::to_value(&c.policy) {
        for (name, value) in policy {
            push(&format!("policy.{name}"), Part::Policy, value);
        }
    }
    push("seed", Part::Setup, json!(c.seed));
    push("cache_bust_salt", Part::Setup, json!(c.cache_bust_salt));
    push("endpoint", Part::Setup, json!(c.endpoint));
    push("emulator", Part::Setup, json!(c.emulator));
    push("model", Part::Setup, json!(c.model));
    push("api", Part::Setup, json!(c.api));
    push("history", Part::Setup, json!(c.history));
    push("max_tokens_field", Part::Setup, json!(c.max_tokens_field));
    push("ignore_eos", Part::Setup, json!(c.ignore_eos));
    push("extra_body", Part::Setup, json!(c.extra_body));
    push("headers", Part::Setup, json!(c.headers));
    push("api_key_set", Part::Setup, json!(c.api_key_set));
    push("insecure", Part::Setup, json!(c.insecure));
    push("timeout_s", Part::Setup, json!(c.timeout_s));
    push("retries", Part::Setup, json!(c.retries));
    push("warm_connections", Part::Setup, json!(c.warm_connections));
    push("threads", Part::Setup, json!(c.threads));
    push(
        "shards",
        Part::Setup,
        json!(c.shard.as_ref().map(|s| s.count)),
    );
    push("arbor_version", Part::Setup, json!(c.arbor_version));
    out
}

/// The settings whose values differ, in BASE's order, then any only NEW
/// has; `endpoint` left out when both runs were emulated.
fn differences(
    run: &str,
    base: &[(String, Part, Value)],
    new: &[(String, Part, Value)],
    both_emulated: bool,
) -> Vec<Difference> {
    let value_in = |list: &[(String, Part, Value)], name: &str| {
        list.iter()
            .find(|(n, _, _)| n == name)
            .map_or(Value::Null, |(_, _, v)| v.clone())
    };
    let only_new = new
        .iter()
        .filter(|(name, _, _)| !base.iter().any(|(n, _, _)| n == name));
    base.iter()
        .chain(only_new)
        .filter(|(name, _, _)| !(both_emulated && name == "endpoint"))
        .filter_map(|(name, part, _)| {
            let (b, n) = (value_in(base, name), value_in(new, name));
            (b != n).then(|| Difference {
                run: run.to_string(),
                part: *part,
                setting: name.clone(),
                base: b,
                new: n,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration of the bundled small run, hashes added.
    fn config() -> RunConfig {
        let text = include_str!("../../../testdata/runs/small/summary.json");
        let summary: Value = serde_json::from_str(text).expect("JSON");
        let mut c: RunConfig =
            serde_json::from_value(summary["config"].clone()).expect("a run's config");
        c.workload_hash = Some("a".repeat(64));
        c.policy_hash = Some("b".repeat(64));
        c
    }

    fn settings_of(c: &Comparability) -> Vec<&str> {
        c.differences.iter().map(|d| d.setting.as_str()).collect()
    }

    #[test]
    fn equal_hashes_are_comparable_and_the_setup_that_differs_is_listed() {
        let base = config();
        let mut new = config();
        new.emulator = Some("--ttft-ms 40".into());
        new.endpoint = Some("http://127.0.0.1:1".into());
        new.seed = 9;
        new.out = "elsewhere".into();
        let c = check(&base, &[("new", &new)]);
        assert!(c.comparable(), "{c:?}");
        assert!(c.refusal("base", false).is_ok());
        // The emulator's port is not a difference, nor the output directory.
        assert_eq!(settings_of(&c), ["seed", "emulator"]);
        assert_eq!(c.differences[1].part, Part::Setup);
        assert_eq!(c.differences[1].new, json!("--ttft-ms 40"));
        assert!(c.describe("base").is_empty());
    }

    #[test]
    fn a_different_workload_hash_is_refused_naming_both_runs_and_what_differs() {
        let base = config();
        let mut new = config();
        new.workload_hash = Some("c".repeat(64));
        new.inputs = "trace_0291.json (weka)".into();
        new.synthetic = None;
        let c = check(&base, &[("runs/new", &new)]);
        assert!(!c.comparable());
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].part, Part::Workload);
        let e = c.refusal("runs/base", false).expect_err("refused");
        assert_eq!(e.kind, arbor_error::Kind::Input);
        for needle in [
            "BASE runs/base and NEW runs/new differ: the workloads differ",
            "workload hash aaaaaaaaaaaa vs cccccccccccc",
            "inputs `synthetic trees=3",
            "` vs `trace_0291.json (weka)`",
            "synthetic `trees=3,turns=4,child_turns=2,isl=200,osl=20,arrival_s=0.2,seed=3` vs `–`",
            "--allow-different",
        ] {
            assert!(e.message.contains(needle), "`{needle}` in {}", e.message);
        }
        assert!(!e.message.contains("policies"), "{}", e.message);
        assert!(c.refusal("runs/base", true).is_ok());
    }

    #[test]
    fn a_different_policy_is_refused_with_the_settings_that_differ() {
        let base = config();
        let mut new = config();
        new.policy_hash = Some("d".repeat(64));
        new.policy.arrival = "poisson:4".into();
        new.seed = 1;
        let c = check(&base, &[("new", &new)]);
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].part, Part::Policy);
        let line = &c.describe("base")[0];
        assert!(
            line.contains("the policies differ (policy hash bbbbbbbbbbbb vs dddddddddddd: policy.arrival `recorded` vs `poisson:4`)"),
            "{line}"
        );
        // The seed is listed, but is not the policy.
        assert!(settings_of(&c).contains(&"seed"));
        assert!(!line.contains("seed"), "{line}");
        // A hash that differs in a setting the configuration does not show.
        let mut hidden = config();
        hidden.policy_hash = Some("e".repeat(64));
        let c = check(&base, &[("new", &hidden)]);
        assert!(c.describe("base")[0].contains("in a setting the configuration does not show"));
    }

    #[test]
    fn without_hashes_the_settings_decide() {
        let mut base = config();
        base.workload_hash = None;
        base.policy_hash = None;
        let same = base.clone();
        assert!(check(&base, &[("same", &same)]).comparable());
        let mut capped = base.clone();
        capped.policy.max_inflight = Some(4);
        let c = check(&base, &[("capped", &capped)]);
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].base_hash, None);
        assert!(
            c.describe("base")[0].contains(
                "the policies differ (BASE records no policy hash, judged by its settings: policy.max_inflight `–` vs `4`)"
            ),
            "{:?}",
            c.describe("base")
        );
        // One side with a hash and the other without: the settings decide.
        let mut hashed = config();
        hashed.inputs = "other".into();
        let c = check(&base, &[("hashed", &hashed)]);
        assert_eq!(c.mismatches.len(), 1);
        assert_eq!(c.mismatches[0].part, Part::Workload);
    }

    #[test]
    fn equal_hashes_win_over_settings_that_only_say_where_the_files_were() {
        let base = config();
        let mut moved = config();
        moved.inputs = "/elsewhere/trace.json (weka)".into();
        let c = check(&base, &[("moved", &moved)]);
        assert!(c.comparable());
        assert_eq!(settings_of(&c), ["inputs"]);
        assert_eq!(c.differences[0].part, Part::Workload);
    }

    #[test]
    fn every_new_run_is_checked_and_named() {
        let base = config();
        let same = config();
        let mut other = config();
        other.workload_hash = Some("f".repeat(64));
        other.policy_hash = Some("0".repeat(64));
        let c = check(&base, &[("same", &same), ("other", &other)]);
        let runs: Vec<(&str, Part)> = c
            .mismatches
            .iter()
            .map(|m| (m.run.as_str(), m.part))
            .collect();
        assert_eq!(runs, [("other", Part::Workload), ("other", Part::Policy)]);
        let lines = c.describe("base");
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("BASE base and NEW other differ: the workloads differ ("));
        assert!(lines[0].contains("; the policies differ ("), "{}", lines[0]);
    }
}
