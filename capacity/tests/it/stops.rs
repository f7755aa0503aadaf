//! A search stops at a probe it cannot take a verdict from: one that
//! failed (its error, in its kind, naming the probe; no further probe;
//! `capacity.json` says which probe and why), and one too small to decide
//! (fewer successful requests than the probe needs: `Probe::min_measured`,
//! `--min-requests`), which leaves the answer unresolved or a bound. The
//! answer stays empty, with no advice to move the range.

use std::path::{Path, PathBuf};

use arbor_capacity::{
    output, search, sweep, About, AnswerKind, Cause, Gaps, Knob, Mode, Observed, Probe,
    RequestSeen, Slo, Space, Start,
};
use arbor_error::{Error, Kind};
use serde_json::Value;

const MS: u64 = 1_000_000;

/// A made-up server: every request takes 100 ms, and a probe at `load`
/// sessions sees `per_session` successful requests a session. Fails
/// with `fails` (its kind and words) at the probe numbered `fails_at`.
#[derive(Clone)]
struct FakeServer {
    per_session: u64,
    min: u64,
    fails_at: Option<(usize, Kind)>,
    measured: Vec<u64>,
}

impl FakeServer {
    fn new(per_session: u64, min: u64) -> FakeServer {
        FakeServer {
            per_session,
            min,
            fails_at: None,
            measured: Vec::new(),
        }
    }
}

impl Probe for FakeServer {
    fn measure(&mut self, k: usize, load: u64) -> Result<Observed, Error> {
        self.measured.push(load);
        if let Some((at, kind)) = self.fails_at {
            if k == at {
                return Err(Error {
                    kind,
                    message: "none of the 40 measured requests succeeded (http_status 40; the \
                              first: HTTP 503: the engine is loading)"
                        .into(),
                });
            }
        }
        let ok = RequestSeen {
            ok: true,
            ttft: Some(10 * MS),
            e2e: 100 * MS,
            tpot: Some(10 * MS),
            gaps: Gaps::Even {
                gap: 10 * MS,
                count: 9,
            },
        };
        Ok(Observed {
            requests: vec![ok; (self.per_session * load) as usize],
            jobs: Vec::new(),
            flights: Vec::new(),
        })
    }

    fn min_measured(&self) -> u64 {
        self.min
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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "arbor-capacity-stops-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

#[test]
fn a_probe_too_small_to_decide_leaves_the_answer_unresolved() {
    let dir = scratch("too-small");
    let slo = Slo::parse("e2e_p99<=1s").expect("an SLO");
    let space = space();
    // Two successful requests a session, 20 needed: the first probe (1
    // session, 2 requests) decides nothing, though its SLO holds.
    let mut server = FakeServer::new(2, 20);
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(server.measured, [1], "no probe after the too-small one");
    let point = &outcome.points[0];
    assert!(point.verdict.too_small);
    assert!(!point.verdict.pass);
    assert!(
        point.verdict.bounds[0].pass,
        "its reading stays as measured"
    );
    assert_eq!(point.verdict.measured, 2);
    assert!(outcome.stopped.is_none(), "nothing failed");
    assert_eq!(outcome.conclusion.kind, AnswerKind::Unresolved);
    let error = outcome
        .finish(&dir, about(&space, &slo))
        .expect_err("unresolved");
    assert_eq!(error.kind, Kind::TooFewMeasured);
    let words = error.to_string();
    for needle in [
        "UNRESOLVED: no answer: no load was decided",
        "sessions=1 stayed unresolved",
        "--duration",
    ] {
        assert!(words.contains(needle), "{needle}: {words}");
    }
    assert!(!words.contains("--search"), "{words}");
    let report = read(&dir.join(output::CAPACITY_FILE));
    assert_eq!(report["answer"]["kind"], "unresolved");
    assert_eq!(report["probes"][0]["too_small"], true);
    assert_eq!(report["probes"][0]["decision"], "unresolved");
    assert_eq!(report["probes"][0]["measured"], 2);
    assert_eq!(report["answer"]["passing"], Value::Null);
    assert_eq!(report["answer"]["failing"], Value::Null);
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn enough_requests_decide_and_the_search_goes_on() {
    let slo = Slo::parse("e2e_p99<=1s").expect("an SLO");
    let space = space();
    // 20 a session: every probe has at least the 20 needed; the top passes.
    let mut server = FakeServer::new(20, 20);
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert!(outcome.stopped.is_none());
    let knee = outcome.found.expect("an answer");
    assert_eq!(knee.passing, Some(64));
    // A search that starts too small stops at once, whatever comes after:
    // 10 a session, 20 needed, the start at 1 session.
    let mut server = FakeServer::new(10, 20);
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(server.measured, [1]);
    assert_eq!(outcome.conclusion.kind, AnswerKind::Unresolved);
}

#[test]
fn a_failed_probe_stops_the_search_in_its_own_kind_naming_the_probe() {
    let dir = scratch("failed");
    let slo = Slo::parse("e2e_p99<=1s").expect("an SLO");
    let space = space();
    let mut server = FakeServer::new(20, 20);
    server.fails_at = Some((2, Kind::FailedTooOften));
    let outcome = search(&mut server, &space, Start::At(1), &slo);
    assert_eq!(server.measured, [1, 2], "no probe after the failed one");
    assert_eq!(outcome.points.len(), 1);
    let error = outcome
        .finish(&dir, about(&space, &slo))
        .expect_err("failed");
    assert_eq!(error.kind, Kind::FailedTooOften);
    let words = error.to_string();
    assert!(
        words.starts_with(
            "probe 2 (sessions=2) failed, and the search stopped without an answer: none of the 40"
        ),
        "{words}"
    );
    assert!(words.contains("HTTP 503: the engine is loading"), "{words}");
    assert!(!words.contains("--search"), "{words}");
    let report = read(&dir.join(output::CAPACITY_FILE));
    assert_eq!(report["stopped"]["probe"], 2);
    assert_eq!(report["stopped"]["load"], 2.0);
    assert_eq!(report["stopped"]["cause"], "failed");
    assert!(report["stopped"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("the engine is loading")));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_sweep_stops_at_the_first_point_too_small_in_load_order() {
    let slo = Slo::parse("e2e_p99<=1s").expect("an SLO");
    let space = Space {
        lo: 1,
        hi: 4,
        ..space()
    };
    // 5 a session, 12 needed: 1 and 2 sessions are too small.
    let outcome = sweep(&FakeServer::new(5, 12), &space, &slo, 2);
    let stop = outcome.stopped.expect("stopped");
    assert_eq!((stop.probe, stop.cause), (1, Cause::TooSmall));
    assert_eq!(outcome.points.len(), 1);
    assert_eq!(
        outcome.found.expect_err("too small").kind,
        Kind::TooFewMeasured
    );
}

#[test]
fn no_load_passing_at_the_least_load_asks_for_no_lower_low_end() {
    let slo = Slo::parse("e2e_p99<=1ms").expect("an SLO");
    let space = space();
    let outcome = search(&mut FakeServer::new(20, 20), &space, Start::At(4), &slo);
    let (knee, _) = outcome
        .finish(&scratch("least"), about(&space, &slo))
        .expect("an answer");
    assert_eq!((knee.passing, knee.failing), (None, Some(1)));
    let sentence =
        output::Answer::of(Knob::Sessions, knee).sentence(Knob::Sessions, "e2e_p99<=1ms");
    assert!(
        sentence.contains("even the least load, sessions=1, fails"),
        "{sentence}"
    );
    assert!(!sentence.contains("lower --search"), "{sentence}");
    // Above the knob's least value the advice stands.
    let higher = Space {
        lo: 4,
        start: 4,
        ..space
    };
    let outcome = search(&mut FakeServer::new(20, 20), &higher, Start::At(4), &slo);
    let knee = outcome.found.expect("an answer");
    let sentence =
        output::Answer::of(Knob::Sessions, knee).sentence(Knob::Sessions, "e2e_p99<=1ms");
    assert!(sentence.contains("lower --search's low end"), "{sentence}");
}
