//! The `custom_probe` example, run: a caller's probe finds its knee.

#[path = "../../examples/custom_probe.rs"]
#[allow(dead_code)]
mod example;

use arbor_capacity::Knee;

#[test]
fn a_custom_probe_finds_its_made_up_knee() {
    let (probed, outcome) = example::knee_of_a_made_up_server().expect("the SLO parses");
    assert_eq!(
        outcome.found.expect("no probe fails"),
        Knee {
            passing: Some(example::KNEE),
            failing: Some(example::KNEE + 1),
        }
    );
    // Doubling to the first failure, then bisecting; no load twice.
    assert_eq!(probed, [1, 2, 4, 8, 16, 32, 64, 48, 40, 44, 42, 41]);
    let numbers: Vec<usize> = outcome.points.iter().map(|p| p.probe).collect();
    assert_eq!(numbers, (1..=12).collect::<Vec<_>>());
    for point in &outcome.points {
        assert_eq!(
            point.verdict.pass,
            point.load <= example::KNEE as f64,
            "{point:?}"
        );
        assert_eq!(
            point.dir,
            format!("probe-{}-sessions-{}", point.probe, point.load)
        );
    }
    let at_41 = outcome.points.last().expect("points");
    assert_eq!(at_41.verdict.request_goodput, Some(0.98));
}
