//! Calibration in process (`arbor_sim::calibrate`): identification on
//! synthetic records, the fixture's fitted profile byte for byte, and the
//! engine limits' rule. (The command's exit codes and printed lines are
//! the CLI's tests, `cli/tests/it/calibrate.rs`.)
//!
//! Identification: closed-loop agents (each turn's prompt extends the
//! last, so the prefix cache hits) are served by the server model with a
//! known profile at four loads; their records, written as `arbor run`
//! writes them, are calibrated; the coefficients the data identify must
//! come back within 10 %, and the fitted profile must predict the p50/p90
//! TTFT and ITL of a different workload at a different load within 10 %
//! of the known profile's. (A reduced version of docs/capacity.md's
//! "Identification"; virtual, so bounded in time.)
//!
//! The fixture `testdata/calibrate/two-sessions/` is such a run (two
//! agents of six turns, README there); its fitted profiles are
//! `testdata/calibrate/*.toml`. A change that moves a fit on purpose
//! re-blesses them with `ARBOR_BLESS_GOLDEN=1 cargo test -p arbor-sim
//! --test it calibrate` and says why in its commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use arbor_error::Kind;
use arbor_sim::calibrate::{self, Calibration, GivenLimits, Metric, Note, Options};
use arbor_sim::server::{ModelEvent, ModelRequest, Profile, ServerModel};
use serde_json::json;

/// A fresh scratch directory for one test under cargo's target tmp dir,
/// emptied when the test starts.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("arbor-sim-it")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/calibrate")
        .join(name)
}

/// The label's date in every fit here: 2026-01-01T00:00:00Z.
fn fitted_at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

/// The known engine's four limits, all given.
const LIMITS: GivenLimits = GivenLimits {
    max_num_seqs: Some(8),
    max_num_batched_tokens: Some(512),
    block_size: Some(16),
    num_gpu_blocks: Some(4096),
};

fn options(run_dirs: &[PathBuf], limits: GivenLimits, correction: bool) -> Options {
    Options {
        run_dirs: run_dirs.to_vec(),
        limits,
        correction,
        fitted_at: fitted_at(),
    }
}

/// The known profile: made up, round numbers; a token budget small
/// enough that prompts take several chunks and cross the knee, and a KV
/// pool that holds the calibration loads without preempting (client
/// records cannot show the recomputation a preemption costs).
const KNOWN: &str = r#"
label = "example: the identification test's known engine"
origin = "example"

[engine]
max_num_batched_tokens = 512
max_num_seqs = 8
block_size = 16
num_gpu_blocks = 4096

[step]
constant_ns = 2000000.0
per_seq_ns = 50000.0
per_token_ns = 20000.0
knee_tokens = 256
per_token_above_knee_ns = 10000.0
per_decode_context_token_ns = 100.0
per_prefill_attention_ns = 1.0

[overhead]
arrival_ns = 1000000
departure_ns = 500000
"#;

fn known() -> Profile {
    Profile::from_toml_str(KNOWN, Path::new("KNOWN")).expect("the known profile parses")
}

/// A closed-loop workload: `agents` conversations of `turns` turns, each
/// sent `think_ns` after the last one's answer; sizes vary by a seeded
/// generator within the given ranges.
#[derive(Debug, Clone, Copy)]
struct Workload {
    agents: u32,
    turns: u32,
    first_prompt: (u32, u32),
    user: (u32, u32),
    output: (u32, u32),
    think_ns: u64,
    stagger_ns: u64,
    seed: u64,
}

/// One served request, as a records line needs it.
#[derive(Debug, Clone, Default)]
struct Served {
    agent: u32,
    turn: u32,
    sent: u64,
    first: u64,
    done: u64,
    isl: u32,
    osl: u32,
    cached: u32,
    /// Each token after the first (served with token events), else empty.
    tokens: Vec<u64>,
}

/// A small seeded generator (SplitMix64).
struct Draw(u64);

impl Draw {
    fn within(&mut self, (lo, hi): (u32, u32)) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        lo + (z % u64::from(hi - lo + 1)) as u32
    }
}

/// Serves `w` with `profile` on the virtual clock; requests in the order
/// they were sent. `stamped`: every token's time is kept (the model's
/// token events, as the real-time emulator streams them).
fn serve(profile: &Profile, w: &Workload, stamped: bool) -> Vec<Served> {
    let bs = profile.engine.block_size;
    let mut draw = Draw(w.seed);
    let mut model = ServerModel::new(profile);
    if stamped {
        model = model.with_token_events();
    }
    let mut prompt: Vec<u32> = (0..w.agents).map(|_| draw.within(w.first_prompt)).collect();
    let mut turn = vec![0u32; w.agents as usize];
    // (send time, agent) of the next turns.
    let mut pending: BTreeMap<(u64, u32), ()> = (0..w.agents)
        .map(|a| ((u64::from(a) * w.stagger_ns, a), ()))
        .collect();
    let mut served: Vec<Served> = Vec::new();
    let mut events = Vec::new();
    loop {
        let send = pending.keys().next().copied();
        let event = model.next_event_at();
        match (send, event) {
            (None, None) => break,
            (Some((at, agent)), e) if e.is_none_or(|e| at <= e) => {
                pending.remove(&(at, agent));
                model.advance(at, &mut events);
                let id = served.len() as u64;
                let isl = prompt[agent as usize];
                let osl = draw.within(w.output);
                // Block i of an agent's conversation has one key.
                let keys: Vec<u64> = (0..isl / bs)
                    .map(|i| (u64::from(agent) << 32) | u64::from(i + 1))
                    .collect();
                model.submit(
                    at,
                    &ModelRequest {
                        id,
                        prompt_tokens: isl,
                        output_tokens: osl,
                        blocks: &keys,
                    },
                );
                served.push(Served {
                    agent,
                    turn: turn[agent as usize],
                    sent: at,
                    isl,
                    osl,
                    ..Served::default()
                });
            }
            (_, Some(e)) => model.advance(e, &mut events),
            (Some(_), None) => unreachable!("matched above"),
        }
        for event in events.drain(..) {
            match event {
                ModelEvent::FirstToken {
                    id,
                    at,
                    cached_tokens,
                } => {
                    let s = &mut served[id as usize];
                    s.first = at;
                    s.cached = cached_tokens;
                }
                ModelEvent::Done { id, at } => {
                    let s = served[id as usize].clone();
                    served[id as usize].done = at;
                    let a = s.agent as usize;
                    turn[a] += 1;
                    if turn[a] < w.turns {
                        prompt[a] = s.isl + s.osl + draw.within(w.user);
                        pending.insert((at + w.think_ns, s.agent), ());
                    }
                }
                ModelEvent::Token { id, at } => served[id as usize].tokens.push(at),
            }
        }
    }
    served
}

/// Writes `served` as the records.jsonl of a run directory, each first
/// token and end stamped up to `jitter_ns` late (a seeded draw per
/// stamp: a client reads the tokens one step produced for several
/// requests one after another, in any order); with every token's gap
/// when it was served stamped.
fn write_run(dir: &Path, served: &[Served], jitter_ns: u32) {
    std::fs::create_dir_all(dir).expect("run dir");
    let secs = |ns: u64| ns as f64 / 1e9;
    let mut late = Draw(served.len() as u64);
    let mut text = String::new();
    for (i, s) in served.iter().enumerate() {
        let mut s = s.clone();
        s.first += u64::from(late.within((0, jitter_ns)));
        s.done = (s.done + u64::from(late.within((0, jitter_ns)))).max(s.first);
        let mut last = s.first;
        let itl: Vec<f64> = s
            .tokens
            .iter()
            .map(|&at| {
                let at = at.clamp(last, s.done);
                let gap = secs(at - last);
                last = at;
                gap
            })
            .collect();
        let line = json!({
            "request": i, "tree": format!("t{}", s.agent), "tree_index": s.agent,
            "agent": "main", "turn": s.turn, "copy": 0, "lane": null, "play": 0,
            "warmup": false, "status": "ok",
            "eligible_s": secs(s.sent), "dispatched_s": secs(s.sent),
            "sent_s": secs(s.sent), "headers_s": secs(s.first), "first_byte_s": secs(s.first),
            "first_content_s": secs(s.first), "done_s": secs(s.done),
            "queue_wait_s": 0.0, "lateness_s": 0.0,
            "ttft_s": secs(s.first - s.sent), "e2e_s": secs(s.done - s.sent), "tpot_s": null,
            "itl_s": itl,
            "planned_input_tokens": s.isl, "planned_output_tokens": s.osl,
            "input_tokens": s.isl, "input_tokens_source": "usage",
            "output_tokens": s.osl, "output_tokens_source": "usage",
            "cached_tokens": s.cached, "http_status": 200, "attempts": 1, "resends": 0,
            "error": null
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::write(dir.join("records.jsonl"), text).expect("records written");
}

/// The nearest-rank quantile of `values`.
fn quantile(values: &mut [u64], p: f64) -> u64 {
    values.sort_unstable();
    let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// p50 and p90 of TTFT and ITL: (name, value).
fn latencies(served: &[Served]) -> Vec<(String, u64)> {
    let mut ttft: Vec<u64> = served.iter().map(|s| s.first - s.sent).collect();
    let mut itl: Vec<u64> = served
        .iter()
        .filter(|s| s.osl > 1)
        .map(|s| (s.done - s.first) / u64::from(s.osl - 1))
        .collect();
    let mut out = Vec::new();
    for (name, values) in [("TTFT", &mut ttft), ("ITL", &mut itl)] {
        for (q, p) in [("p50", 0.5), ("p90", 0.9)] {
            out.push((format!("{name} {q}"), quantile(values, p)));
        }
    }
    out
}

fn within(name: &str, got: f64, want: f64, tolerance: f64) {
    let off = error(got, want);
    assert!(
        off.abs() <= tolerance * 100.0,
        "{name}: fitted {got}, known {want} ({off:.1} % off)"
    );
}

fn calibration_workload(agents: u32, seed: u64) -> Workload {
    Workload {
        agents,
        turns: 6,
        first_prompt: (100, 1200),
        user: (20, 300),
        output: (10, 120),
        think_ns: 30_000_000,
        stagger_ns: 7_000_000,
        seed,
    }
}

/// Calibrates from runs of the known profile at `loads` (agents) and
/// checks what the records identify (`stamped`: records with every
/// token's gap); prints the figures as Markdown tables (docs/capacity.md,
/// "Identification") and returns the fitted profile.
fn identify(name: &str, loads: &[u32], turns: u32, jitter_ns: u32, stamped: bool) -> Profile {
    let known = known();
    let dir = scratch(name);
    let dirs: Vec<PathBuf> = loads
        .iter()
        .map(|&agents| {
            let run = dir.join(format!("load-{agents}"));
            // The lone session is the low-load run whose TTFTs identify
            // the prefill side: it gets more turns.
            let workload = Workload {
                turns: if agents == 1 { 4 * turns } else { turns },
                ..calibration_workload(agents, 10 + u64::from(agents))
            };
            write_run(&run, &serve(&known, &workload, stamped), jitter_ns);
            run
        })
        .collect();
    let calibration = calibrate::fit(&options(&dirs, LIMITS, true)).expect("the runs fit");
    let text = fit_error_lines(&calibration);
    assert!(calibration.correction.is_some(), "stage B ran");
    assert_eq!(
        calibration.fit_error.len(),
        loads.len() + 1,
        "each run, then all"
    );
    let all = calibration.fit_error.last().expect("all");
    assert_eq!(all.run, None);
    for (metric, quantile) in [
        (Metric::Ttft, "p50"),
        (Metric::Itl, "p90"),
        (Metric::E2e, "p90"),
    ] {
        assert!(
            all.compared
                .iter()
                .any(|c| c.metric == metric && c.quantile == quantile),
            "{} {quantile} in:\n{text}",
            metric.name()
        );
    }
    let out = dir.join("fitted.toml");
    calibration
        .write_profile(&out)
        .expect("the profile is written");
    let fitted = Profile::from_toml_path(&out).expect("the profile reads back");
    assert_eq!(
        fitted, calibration.profile,
        "what is written reads back the same"
    );
    assert_eq!(fitted.origin.to_string(), "fitted");
    let names: Vec<String> = loads.iter().map(|a| format!("load-{a}")).collect();
    assert!(fitted.label.contains(&names.join(", ")), "{}", fitted.label);
    assert_eq!(fitted.engine, known.engine);

    let mut figures =
        String::from("| coefficient | known | fitted | error |\n|---|---:|---:|---:|\n");
    let (k, f) = (&known.step, &fitted.step);
    let overhead = |p: &Profile| (p.overhead.arrival_ns + p.overhead.departure_ns) as f64;
    // (name, known, fitted, the bound the records identify it within).
    // The step's constant, the per-token and the decode-context costs
    // come back within 10 %; the overheads only together (client stamps
    // see their sum) and only from the TTFTs of requests that ran alone,
    // so within 15 %; the rest are printed, not asserted (docs/capacity.md
    // says why).
    let coefficients = [
        ("constant_ns", k.constant_ns, f.constant_ns, Some(0.10)),
        ("per_seq_ns", k.per_seq_ns, f.per_seq_ns, None),
        ("per_token_ns", k.per_token_ns, f.per_token_ns, Some(0.10)),
        (
            "knee_tokens",
            k.knee_tokens.into(),
            f.knee_tokens.into(),
            None,
        ),
        (
            "per_token_above_knee_ns",
            k.per_token_above_knee_ns,
            f.per_token_above_knee_ns,
            None,
        ),
        (
            "per_decode_context_token_ns",
            k.per_decode_context_token_ns,
            f.per_decode_context_token_ns,
            Some(0.10),
        ),
        (
            "per_prefill_attention_ns",
            k.per_prefill_attention_ns,
            f.per_prefill_attention_ns,
            None,
        ),
        // A stamp read late is, to the client, overhead: the known sum
        // plus the mean lateness of a first token.
        (
            "arrival_ns + departure_ns",
            overhead(&known) + f64::from(jitter_ns) / 2.0,
            overhead(&fitted),
            Some(0.15),
        ),
    ];
    for (name, want, got, _) in coefficients {
        figures.push_str(&format!(
            "| {name} | {want} | {got:.1} | {:+.1} % |\n",
            error(got, want)
        ));
    }
    // A different workload (longer prompts and answers) at another load.
    let other = Workload {
        agents: 9,
        turns: 5,
        first_prompt: (600, 2000),
        user: (100, 500),
        output: (40, 200),
        think_ns: 20_000_000,
        stagger_ns: 3_000_000,
        seed: 99,
    };
    let live = latencies(&serve(&known, &other, false));
    let predicted = latencies(&serve(&fitted, &other, false));
    figures.push_str("\n| other workload | known profile ms | fitted profile ms | error |\n|---|---:|---:|---:|\n");
    for ((metric, want), (_, got)) in live.iter().zip(&predicted) {
        figures.push_str(&format!(
            "| {metric} | {:.2} | {:.2} | {:+.1} % |\n",
            *want as f64 / 1e6,
            *got as f64 / 1e6,
            error(*got as f64, *want as f64)
        ));
    }
    eprintln!("{text}\n{figures}");
    for (name, want, got, bound) in coefficients {
        if let Some(bound) = bound {
            within(name, got, want, bound);
        }
    }
    for ((metric, want), (_, got)) in live.iter().zip(&predicted) {
        within(metric, *got as f64, *want as f64, 0.10);
    }
    fitted
}

/// (got − want) / want, in percent.
fn error(got: f64, want: f64) -> f64 {
    (got - want) / want * 100.0
}

#[test]
fn calibration_identifies_a_known_profile() {
    identify("calibrate-identify", &[1, 3, 6, 12], 8, 0, false);
}

/// The same through a client's stamps: each first token and end read up
/// to 0.4 ms late, so tokens of one step reach the client in any order
/// (as against the real-time emulator, docs/capacity.md).
#[test]
fn calibration_identifies_through_late_stamps() {
    identify("calibrate-identify-late", &[1, 3, 6, 12], 8, 400_000, false);
}

/// The same with every token stamped at its step's end, as the real-time
/// emulator streams them (docs/capacity.md, "The emulator under a
/// profile"): the gaps are the steps themselves, so the knee comes back
/// exactly and the per-token, decode-context and overhead costs within
/// 5 %.
#[test]
fn calibration_identifies_more_from_stamped_tokens() {
    let known = known();
    let fitted = identify("calibrate-identify-stamped", &[1, 3, 6, 12], 8, 0, true);
    let (k, f) = (&known.step, &fitted.step);
    assert_eq!(f.knee_tokens, k.knee_tokens);
    within("per_token_ns", f.per_token_ns, k.per_token_ns, 0.05);
    within(
        "per_decode_context_token_ns",
        f.per_decode_context_token_ns,
        k.per_decode_context_token_ns,
        0.05,
    );
    let overhead = |p: &Profile| (p.overhead.arrival_ns + p.overhead.departure_ns) as f64;
    within(
        "arrival_ns + departure_ns",
        overhead(&fitted),
        overhead(&known),
        0.05,
    );
}

/// The bootstrap's draws (stage A refitted on resamples of the requests)
/// are the same every time, go into the profile's `uncertainty`, and
/// bracket the known coefficients the records identify.
#[test]
fn the_bootstrap_repeats_and_its_draws_bracket_the_known_coefficients() {
    let known = known();
    let dir = scratch("calibrate-bootstrap");
    let dirs: Vec<PathBuf> = [1u32, 2]
        .iter()
        .map(|&agents| {
            let run = dir.join(format!("load-{agents}"));
            let workload = Workload {
                turns: 16,
                ..calibration_workload(agents, 10 + u64::from(agents))
            };
            write_run(&run, &serve(&known, &workload, true), 300_000);
            run
        })
        .collect();
    let fit = || calibrate::fit_resampled(&options(&dirs, LIMITS, false), 40).expect("fits");
    let (a, b) = (fit(), fit());
    let Some(uncertainty) = &a.profile.uncertainty else {
        panic!("the profile carries its draws")
    };
    assert_eq!(uncertainty.draws.len(), 40);
    assert!(
        uncertainty.method.starts_with("bootstrap: 40 resamples"),
        "{}",
        uncertainty.method
    );
    assert_eq!(
        a.profile.uncertainty, b.profile.uncertainty,
        "seeded: the same draws"
    );
    assert_eq!(a.spreads, b.spreads);
    // The draws differ from each other (the resamples do).
    assert!(uncertainty.draws.windows(2).any(|w| w[0] != w[1]));
    let k = &known.step;
    let overhead = (known.overhead.arrival_ns + known.overhead.departure_ns) as f64;
    for (name, want) in [
        ("constant_ns", k.constant_ns),
        ("per_token_ns", k.per_token_ns),
        ("per_decode_context_token_ns", k.per_decode_context_token_ns),
        ("overhead_ns", overhead),
    ] {
        let s = a.spreads.iter().find(|s| s.name == name).expect("a spread");
        let (lo, hi) = uncertainty
            .draws
            .iter()
            .map(|d| match name {
                "constant_ns" => d.step.constant_ns,
                "per_token_ns" => d.step.per_token_ns,
                "per_decode_context_token_ns" => d.step.per_decode_context_token_ns,
                _ => (d.overhead.arrival_ns + d.overhead.departure_ns) as f64,
            })
            .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        eprintln!(
            "{name}: known {want}, value {}, 90 % [{}, {}], draws [{lo}, {hi}]",
            s.value, s.low, s.high
        );
        assert!(
            lo <= want && want <= hi,
            "{name}: known {want} outside the draws [{lo}, {hi}]"
        );
        assert!(
            s.low <= s.value && s.value <= s.high * 1.0001 + 1.0,
            "{s:?}"
        );
        assert!(s.identified(), "{s:?}");
    }
    // The written profile reads back with its draws.
    let out = dir.join("fitted.toml");
    a.write_profile(&out).expect("written");
    let back = Profile::from_toml_path(&out).expect("reads back");
    assert_eq!(back.uncertainty, a.profile.uncertainty);
}

/// The figures of docs/capacity.md: more loads, longer conversations
/// (`cargo test -p arbor-sim --test it calibrate_full -- --ignored
/// --nocapture`).
#[test]
#[ignore = "the full figures; about a second, run by hand for the docs"]
fn calibrate_full_identification_figures() {
    identify(
        "calibrate-identify-full",
        &[1, 2, 4, 6, 9, 12, 16],
        12,
        0,
        false,
    );
}

/// The fit error of every run and of all, a line per metric and
/// quantile (what the figures print beside the tables).
fn fit_error_lines(c: &Calibration) -> String {
    let mut text = String::new();
    for block in &c.fit_error {
        for q in &block.compared {
            text.push_str(&format!(
                "{:8} {} {}: measured {:.2} ms, predicted {:.2} ms, {:+.1} %\n",
                block.run.as_deref().unwrap_or("all"),
                q.metric.name(),
                q.quantile,
                q.measured as f64 / 1e6,
                q.predicted as f64 / 1e6,
                q.error_pct()
            ));
        }
    }
    text
}

/// Compares `actual` with `testdata/calibrate/NAME`, or writes it when
/// blessing (`ARBOR_BLESS_GOLDEN=1`).
fn golden(name: &str, actual: &str) {
    let path = testdata(name);
    if std::env::var_os("ARBOR_BLESS_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("golden file written");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("golden file");
    assert!(
        actual == expected,
        "{} differs (re-bless on purpose only):\n{actual}",
        path.display()
    );
}

/// The fixture's profile, fitted with and without stage B, is the same
/// bytes every time (the block size and the pool from its
/// `metrics.jsonl`).
#[test]
fn the_fixture_fits_to_the_same_profile_byte_for_byte() {
    let runs = [testdata("two-sessions")];
    let limits = GivenLimits {
        max_num_seqs: Some(8),
        max_num_batched_tokens: Some(512),
        ..GivenLimits::default()
    };
    let corrected = calibrate::fit(&options(&runs, limits, true)).expect("fits");
    golden("two-sessions.fitted.toml", &corrected.profile.to_toml());
    let plain = calibrate::fit(&options(&runs, limits, false)).expect("fits");
    golden("two-sessions.no-correction.toml", &plain.profile.to_toml());
    assert_eq!(plain.correction, None);
    assert_eq!(
        plain.profile.step, plain.stage_a.step,
        "stage A's fit as it is"
    );
    assert_eq!(corrected.stage_a, plain.stage_a);
    assert!(
        corrected.profile.label.starts_with(
            "fitted here by arbor calibrate on 2026-01-01T00:00:00Z against an unnamed model \
             served by an unrecorded server, from runs two-sessions"
        ),
        "{}",
        corrected.profile.label
    );
    let run = &corrected.runs[0];
    assert_eq!(
        (run.name.as_str(), run.requests, run.skipped),
        ("two-sessions", 12, 0)
    );
    // The server's preemption counter rose from 2 to 5 during the run;
    // twelve requests leave some coefficients not identified.
    assert_eq!(
        corrected.notes[0],
        Note::Preempted {
            run: "two-sessions".into(),
            times: 3.0
        }
    );
    assert!(corrected.notes[1..]
        .iter()
        .all(|n| matches!(n, Note::NotIdentified(_))));
    let Some(c) = corrected.correction else {
        panic!("stage B ran")
    };
    assert!(c.loss_after <= c.loss_before, "{c:?}");
    assert_eq!(corrected.fit_error.len(), 1, "one run: no `all` block");
}

#[test]
fn a_limit_neither_given_nor_scraped_names_its_flag() {
    let runs = [testdata("two-sessions")];
    // metrics.jsonl's cache_config_info states the block size and the
    // pool, never the token budget.
    let limits = GivenLimits {
        max_num_batched_tokens: None,
        ..LIMITS
    };
    let Err(e) = calibrate::fit(&options(&runs, limits, false)) else {
        panic!("the budget is not known")
    };
    assert_eq!(e.kind, Kind::Input);
    assert!(
        e.message.contains("give --max-num-batched-tokens N"),
        "{}",
        e.message
    );
    let zero = GivenLimits {
        max_num_seqs: Some(0),
        ..LIMITS
    };
    let Err(e) = calibrate::fit(&options(&runs, zero, false)) else {
        panic!("zero sequences")
    };
    assert_eq!(
        (e.kind, e.message.as_str()),
        (Kind::Input, "calibrate: --max-num-seqs must be at least 1")
    );
}

#[test]
fn runs_without_a_finished_request_have_nothing_to_fit() {
    let dir = scratch("calibrate-empty").join("run");
    std::fs::create_dir_all(&dir).expect("run dir");
    std::fs::write(dir.join("records.jsonl"), "").expect("records written");
    let Err(e) = calibrate::fit(&options(&[dir], LIMITS, true)) else {
        panic!("nothing to fit")
    };
    assert_eq!(
        (e.kind, e.message.as_str()),
        (
            Kind::Input,
            "calibrate: no finished request in the runs' records.jsonl: nothing to fit"
        )
    );
}

/// The fixture's records are what the README says: the known profile
/// serving two sessions, written as `arbor run` writes them.
#[test]
fn the_fixture_is_the_known_profile_serving_two_sessions() {
    let dir = scratch("calibrate-fixture").join("run");
    write_run(
        &dir,
        &serve(&known(), &calibration_workload(2, 1), false),
        0,
    );
    let written = std::fs::read_to_string(dir.join("records.jsonl")).expect("written");
    let fixture =
        std::fs::read_to_string(testdata("two-sessions/records.jsonl")).expect("the fixture");
    assert!(
        written == fixture,
        "the fixture's records differ from:\n{written}"
    );
}
