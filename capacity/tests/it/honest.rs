//! The honest search over a sampled probe (judged on 95 % intervals): a
//! probe too short to decide is extended and, still unresolved, turns the
//! answer into a bound (at least L, below H, a bracket, or nothing)
//! rather than a point; enough requests bracket the known knee to the
//! step; a confirmation run that does not pass again downgrades the
//! answer. A made-up server with a known knee: up to 20 sessions a
//! request's latency is spread evenly over (0, 1 s], above it over
//! (0, 4 s]; the SLO `e2e_p50<=1s` holds up to 20 sessions.

use std::path::PathBuf;

use arbor_capacity::{
    confirm, output, search, sweep, About, AnswerKind, Cause, Decision, Gaps, Knob, Mode, Observed,
    Probe, RequestSeen, Slo, Space, Start,
};
use arbor_error::{Error, Kind};
use serde_json::Value;

const MS: u64 = 1_000_000;
const KNEE: u64 = 20;

/// `n` requests at `sessions`, their latencies evenly spread.
fn requests(sessions: u64, n: u64) -> Vec<RequestSeen> {
    let top = if sessions <= KNEE {
        1000 * MS
    } else {
        4000 * MS
    };
    (1..=n)
        .map(|i| RequestSeen {
            ok: true,
            ttft: Some(MS),
            e2e: top * i / n,
            tpot: None,
            gaps: Gaps::Listed(Vec::new()),
        })
        .collect()
}

/// A sampled server: each probe measures `per_probe` requests (or
/// `short` at the loads listed in `short_at`), each extension twice as
/// many as the round before, up to `extensions` of them; the measurements
/// of `flaky` after its first come back slow.
#[derive(Clone, Default)]
struct Sampled {
    per_probe: u64,
    short: u64,
    short_at: Vec<u64>,
    extensions: u32,
    flaky: Option<u64>,
    measured: Vec<u64>,
    extended: Vec<(usize, u32)>,
}

impl Sampled {
    fn count(&self, value: u64) -> u64 {
        if self.short_at.contains(&value) {
            self.short
        } else {
            self.per_probe
        }
    }
}

impl Probe for Sampled {
    fn measure(&mut self, _k: usize, value: u64) -> Result<Observed, Error> {
        let seen_before = self.measured.contains(&value);
        self.measured.push(value);
        let slow = self.flaky == Some(value) && seen_before;
        let as_if = if slow { KNEE + 1 } else { value };
        Ok(Observed {
            requests: requests(as_if, self.count(value)),
            jobs: Vec::new(),
            flights: Vec::new(),
        })
    }

    fn sampled(&self) -> bool {
        true
    }

    fn extend(&mut self, k: usize, value: u64, round: u32) -> Result<Option<Observed>, Error> {
        if round > self.extensions {
            return Ok(None);
        }
        self.extended.push((k, round));
        Ok(Some(Observed {
            requests: requests(value, self.count(value) << round),
            jobs: Vec::new(),
            flights: Vec::new(),
        }))
    }
}

fn space() -> Space {
    Space {
        knob: Knob::Sessions,
        lo: 1,
        hi: 64,
        start: 1,
        step: 1,
    }
}

fn slo() -> Slo {
    Slo::parse("e2e_p50<=1s").expect("an SLO")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "arbor-capacity-honest-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn about<'a>(space: &'a Space, slo: &'a Slo) -> About<'a> {
    About {
        mode: Mode::Live,
        space,
        slo,
        service: "recorded",
        predicted: None,
        replicas: 1,
    }
}

fn read(dir: &std::path::Path) -> Value {
    let path = dir.join(output::CAPACITY_FILE);
    let text = std::fs::read_to_string(&path).expect("capacity.json");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn short_probes_give_no_point() {
    // Five requests a probe: the median's interval has no end at 95 %.
    let dir = scratch("short");
    let (space, slo) = (space(), slo());
    let mut server = Sampled {
        per_probe: 5,
        ..Sampled::default()
    };
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(server.measured, [1], "the search does not move on noise");
    assert_eq!(outcome.conclusion.kind, AnswerKind::Unresolved);
    let point = &outcome.points[0];
    assert_eq!(point.verdict.decision, Decision::Unresolved);
    assert!(point.verdict.bounds[0].pass, "its reading meets the SLO");
    let confidence = point.verdict.bounds[0].confidence.expect("an interval");
    assert_eq!((confidence.lo, confidence.hi), (None, None));
    let error = outcome
        .finish(&dir, about(&space, &slo))
        .expect_err("no point");
    assert_eq!(error.kind, Kind::TooFewMeasured);
    assert!(
        error.message.starts_with("UNRESOLVED: no answer"),
        "{error}"
    );
    let report = read(&dir);
    assert_eq!(report["answer"]["kind"], "unresolved");
    assert_eq!(report["answer"]["unresolved"], serde_json::json!([1.0]));
    assert_eq!(report["probes"][0]["decision"], "unresolved");
    assert_eq!(
        report["probes"][0]["bounds"][0]["confidence"]["hi"],
        Value::Null
    );
}

#[test]
fn extensions_resolve_a_short_probe_and_enough_requests_find_the_knee() {
    // 5 requests, then 10 and 20 more: 35 pooled decide every load.
    let (space, slo) = (space(), slo());
    let mut server = Sampled {
        per_probe: 5,
        extensions: 2,
        ..Sampled::default()
    };
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(outcome.conclusion.kind, AnswerKind::Point);
    let knee = outcome.found.as_ref().expect("a knee");
    assert_eq!((knee.passing, knee.failing), (Some(KNEE), Some(KNEE + 1)));
    // Five plus ten are 15: the median's interval is the 4th to the 12th,
    // (267 ms, 800 ms] below the knee: one extension decides each probe.
    assert!(
        server.extended.iter().all(|&(_, round)| round == 1),
        "{:?}",
        server.extended
    );
    assert_eq!(server.extended.len(), outcome.points.len());
    let at_knee = outcome.conclusion.passing_by.as_ref().expect("its reading");
    assert_eq!(at_knee.measured, 15);
    let interval = at_knee.bounds[0].confidence.expect("an interval");
    assert_eq!(interval.ranks, [4, 12]);
    assert_eq!(
        outcome.points[0].extensions,
        ["probe-1-sessions-1-extension-1"]
    );
    let failing = outcome.conclusion.failing_by.as_ref().expect("its reading");
    assert_eq!(failing.bounds[0].decision, Decision::Fail);

    // Forty requests a probe decide at once, without extending.
    let mut server = Sampled {
        per_probe: 40,
        extensions: 2,
        ..Sampled::default()
    };
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(outcome.conclusion.kind, AnswerKind::Point);
    assert!(server.extended.is_empty());
}

#[test]
fn a_probe_still_unresolved_makes_the_answer_a_bound() {
    let (space, slo) = (space(), slo());
    let bound = |short_at: Vec<u64>, start: u64| {
        let mut server = Sampled {
            per_probe: 40,
            short: 5,
            short_at,
            extensions: 0,
            ..Sampled::default()
        };
        let outcome = search(&mut server, &space, Start::At(start), &slo);
        (outcome, server.measured)
    };
    // 1, 2, 4, 8 pass; 16 is unresolved: at least 8.
    let (outcome, measured) = bound(vec![16], 1);
    assert_eq!(measured, [1, 2, 4, 8, 16]);
    let c = &outcome.conclusion;
    assert_eq!(c.kind, AnswerKind::LowerBound);
    assert_eq!((c.passing, c.failing), (Some(8.0), None));
    assert_eq!(c.unresolved, [16.0]);
    let said = c
        .bound_sentence(Knob::Sessions, "e2e_p50<=1s")
        .expect("a bound");
    assert!(
        said.contains("only a lower bound: at least sessions=8"),
        "{said}"
    );

    // ... 16 passes, 32 fails, 24 is unresolved: the bracket [16, 32].
    let (outcome, measured) = bound(vec![24], 1);
    assert_eq!(measured, [1, 2, 4, 8, 16, 32, 24]);
    let c = &outcome.conclusion;
    assert_eq!(c.kind, AnswerKind::Bracket);
    assert_eq!((c.passing, c.failing), (Some(16.0), Some(32.0)));
    assert_eq!(c.unresolved, [24.0]);
    assert_eq!(c.passing_by.as_ref().map(|d| d.probe), Some(5));
    assert_eq!(c.failing_by.as_ref().map(|d| d.probe), Some(6));

    // From 64 down: 64 and 32 fail, 16 is unresolved: below 32.
    let (outcome, measured) = bound(vec![16], 64);
    assert_eq!(measured, [64, 32, 16]);
    let c = &outcome.conclusion;
    assert_eq!(c.kind, AnswerKind::UpperBound);
    assert_eq!((c.passing, c.failing), (None, Some(32.0)));
    let dir = scratch("bound");
    let error = outcome
        .finish(&dir, about(&space, &slo))
        .expect_err("a bound is not a point");
    assert_eq!(error.kind, Kind::TooFewMeasured);
    assert!(
        error
            .message
            .contains("only an upper bound: below sessions=32"),
        "{error}"
    );
    let report = read(&dir);
    assert_eq!(report["answer"]["kind"], "upper_bound");
    assert_eq!(report["answer"]["failing"], 32.0);
    assert_eq!(report["answer"]["unresolved"], serde_json::json!([16.0]));
    assert_eq!(report["complete"], true);
    assert_eq!(report["stopped"], Value::Null);
}

#[test]
fn a_confirmation_that_fails_downgrades_the_answer() {
    let (space, slo) = (space(), slo());
    let mut server = Sampled {
        per_probe: 40,
        flaky: Some(KNEE),
        ..Sampled::default()
    };
    let mut outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(outcome.conclusion.kind, AnswerKind::Point);
    let probes = outcome.points.len();
    confirm(&mut server, &space, &slo, &mut outcome);
    assert_eq!(
        server.measured.last(),
        Some(&KNEE),
        "the knee measured again"
    );
    assert_eq!(outcome.points.len(), probes + 1);
    assert!(outcome.points[probes].confirmation);
    let c = &outcome.conclusion;
    let confirmation = c.confirmation.expect("a confirmation");
    assert!(!confirmation.held);
    assert_eq!(confirmation.decision, Decision::Fail);
    // 16 is the largest load that passed every time; 21 fails; 20 is
    // now unresolved between them.
    assert_eq!(c.kind, AnswerKind::Bracket);
    assert_eq!((c.passing, c.failing), (Some(16.0), Some(21.0)));
    assert!(c.unresolved.contains(&20.0), "{:?}", c.unresolved);
    let said = c
        .bound_sentence(Knob::Sessions, "e2e_p50<=1s")
        .expect("a bound");
    assert!(said.contains("its confirmation, probe"), "{said}");

    // A steady server confirms its knee.
    let mut server = Sampled {
        per_probe: 40,
        ..Sampled::default()
    };
    let mut outcome = search(&mut server, &space, Start::At(1), &slo);
    confirm(&mut server, &space, &slo, &mut outcome);
    let c = &outcome.conclusion;
    assert_eq!(c.kind, AnswerKind::Point);
    assert!(c.confirmation.expect("a confirmation").held);
    assert_eq!(c.passing_by.as_ref().map(|d| d.probe), Some(probes + 1));
}

#[test]
fn goodput_is_judged_on_its_wilson_interval() {
    let slo = Slo::parse("e2e_p50<=1s,goodput>=0.5").expect("an SLO");
    // Below the knee every request meets 1 s: 10 of 10 is (72 %, 100 %].
    let observed = Observed {
        requests: requests(1, 10),
        jobs: Vec::new(),
        flights: Vec::new(),
    };
    let v = observed.judge_sampled(&slo, 0);
    assert_eq!(v.decision, Decision::Pass);
    let [lo, hi] = v.request_goodput_interval.expect("an interval");
    assert!((lo - 0.7225).abs() < 1e-3 && hi > 0.999, "{lo} {hi}");
    // Above it a quarter meets it: 1 of 4 is (4.6 %, 69.9 %): unresolved.
    let observed = Observed {
        requests: requests(KNEE + 1, 4),
        jobs: Vec::new(),
        flights: Vec::new(),
    };
    let v = observed.judge_sampled(&slo, 0);
    assert_eq!(v.decision, Decision::Unresolved);
    // 10 of 40 is (14.2 %, 40.2 %): a failure.
    let observed = Observed {
        requests: requests(KNEE + 1, 40),
        jobs: Vec::new(),
        flights: Vec::new(),
    };
    assert_eq!(observed.judge_sampled(&slo, 0).decision, Decision::Fail);
}

#[test]
fn a_sweep_stops_at_a_point_unresolved_on_its_intervals() {
    let space = Space { hi: 4, ..space() };
    let server = Sampled {
        per_probe: 40,
        short: 5,
        short_at: vec![3],
        ..Sampled::default()
    };
    let outcome = sweep(&server, &space, &slo(), 2);
    let stop = outcome.stopped.expect("stopped");
    assert_eq!((stop.probe, stop.cause), (3, Cause::Unresolved));
    assert!(stop.message.contains("95 % interval"), "{}", stop.message);
    assert_eq!(
        outcome.found.expect_err("unresolved").kind,
        Kind::TooFewMeasured
    );
}
