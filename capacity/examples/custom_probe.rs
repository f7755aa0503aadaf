//! A capacity search with a probe of your own: the library searches, a
//! [`Probe`] you write measures. Here the probe is a made-up server whose
//! goodput falls past a knee of 40 sessions (a share of its requests takes
//! 5 s instead of 1 s, 2 % more each session past the knee); the search
//! over 1..256 sessions finds 40 passing and 41 failing, probing 12 loads.
//! A real probe would run a load and read what its requests saw.
//!
//! `cargo run -p arbor-capacity --example custom_probe`
//! (the test suite runs [`knee_of_a_made_up_server`] too:
//! `cargo test -p arbor-capacity --test it custom_probe`).

use arbor_capacity::{
    search, Gaps, Knob, Observed, Outcome, Probe, RequestSeen, Slo, Space, Start,
};
use arbor_error::Error;

/// Where the made-up server's goodput starts to fall, in sessions.
pub const KNEE: u64 = 40;

const MS: u64 = 1_000_000;

/// The made-up server, and the loads it was asked for.
#[derive(Default)]
pub struct MadeUpServer {
    pub probed: Vec<u64>,
}

impl Probe for MadeUpServer {
    /// 100 requests at `sessions`: up to the knee each takes 1 s; past
    /// it, 2 in every 100 more take 5 s each session.
    fn measure(&mut self, _k: usize, sessions: u64) -> Result<Observed, Error> {
        self.probed.push(sessions);
        let slow = sessions.saturating_sub(KNEE).saturating_mul(2);
        let requests = (0..100u64)
            .map(|i| RequestSeen {
                ok: true,
                ttft: Some(100 * MS),
                e2e: if i < slow { 5_000 * MS } else { 1_000 * MS },
                tpot: Some(10 * MS),
                gaps: Gaps::Even {
                    gap: 10 * MS,
                    count: 90,
                },
            })
            .collect();
        Ok(Observed {
            requests,
            jobs: Vec::new(),
            flights: Vec::new(),
        })
    }
}

/// Searches the made-up server's knee: sessions 1..256 from 1, passing
/// while 99 % of the requests end within 2 s. Gives back the loads the
/// probe was asked for, in order, and the search's outcome.
pub fn knee_of_a_made_up_server() -> Result<(Vec<u64>, Outcome), Error> {
    let slo = Slo::parse("e2e_p50<=2s,goodput>=0.99").map_err(Error::input)?;
    let space = Space {
        knob: Knob::Sessions,
        lo: 1,
        hi: 256,
        start: 1,
        step: 1,
    };
    let mut server = MadeUpServer::default();
    let outcome = search(&mut server, &space, Start::At(space.start), &slo);
    Ok((server.probed, outcome))
}

fn main() -> Result<(), Error> {
    let (_, outcome) = knee_of_a_made_up_server()?;
    for point in &outcome.points {
        println!(
            "probe {:>2}  sessions {:>3}  goodput {:>5.1} %  {}",
            point.probe,
            point.load,
            point.verdict.request_goodput.unwrap_or(0.0) * 100.0,
            if point.verdict.pass { "pass" } else { "FAIL" }
        );
    }
    let knee = outcome.found?;
    println!(
        "largest load meeting every SLO: sessions={} (sessions={} fails)",
        knee.passing.map_or("-".to_string(), |v| v.to_string()),
        knee.failing.map_or("-".to_string(), |v| v.to_string()),
    );
    Ok(())
}
