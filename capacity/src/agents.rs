//! A load point in agents and jobs, not requests (docs/capacity.md, "In
//! agents and jobs per hour"). An *agent* here is a tree: one job of a
//! top-level agent with its subagents, one play of a tree from its first
//! request sent to its last done ([`crate::observed::Flight`]). Over the point's measured
//! window (the first request of any play sent to the last one done), it
//! gives the trees in flight (mean and peak), the agents in flight
//! counting subagents (each agent of a play from its own first request to
//! its last), the jobs completed (plays that ran every turn: the
//! [`Observed::jobs`] the job SLOs judge), jobs per hour, the goodput of
//! trees in jobs per hour (the [`Verdict::job_goodput`] share of them),
//! and jobs per hour per user (3600 s over the mean job time: how often
//! one user, waiting on each job, gets one done).
//!
//! Owns those figures of one point and the answer's sentence in agents;
//! knows nothing of how the flights were measured (a virtual plan or a
//! run directory fills [`Observed::flights`]).

use arbor_engine::time::Nanos;
use serde::Serialize;

use crate::knob::Knob;
use crate::observed::{Observed, Verdict};

/// One point in agents and jobs: `capacity.json`'s `agents` of a probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agents {
    /// The measured window, first send to last done of any play
    /// (seconds; 0 with no flight).
    pub window_s: f64,
    /// Trees (top-level agents with their subagents) in flight over the
    /// window: the mean, and the most at any instant.
    pub trees_mean: f64,
    pub trees_peak: u64,
    /// Agents in flight counting subagents, each agent from its own
    /// first request to its last: the mean and the peak.
    pub agents_mean: f64,
    pub agents_peak: u64,
    /// Plays that ran every turn (the trees the job SLOs judge).
    pub jobs: u64,
    /// Jobs completed per hour of the window (`None`: no window).
    pub jobs_per_hour: Option<f64>,
    /// The goodput of trees in jobs per hour: the jobs whose time meets
    /// every `job_pNN` bound, per hour (`None`: no job bound, or no job).
    pub good_jobs_per_hour: Option<f64>,
    /// The mean job time, seconds (`None`: no job).
    pub job_time_mean_s: Option<f64>,
    /// Jobs per hour per user: 3600 s over the mean job time (`None`: no
    /// job).
    pub jobs_per_hour_per_user: Option<f64>,
}

impl Agents {
    /// The figures of a point that observed `observed` and was judged
    /// `verdict` (its goodput of trees reused).
    pub fn of(observed: &Observed, verdict: &Verdict) -> Agents {
        let flights = &observed.flights;
        let start = flights.iter().map(|f| f.start).min().unwrap_or(0);
        let end = flights.iter().map(|f| f.end).max().unwrap_or(0);
        let window = end.saturating_sub(start);
        let trees: Vec<(Nanos, Nanos)> = flights.iter().map(|f| (f.start, f.end)).collect();
        let agents: Vec<(Nanos, Nanos)> = flights
            .iter()
            .flat_map(|f| f.agents.iter().copied())
            .collect();
        let (trees_mean, trees_peak) = in_flight(&trees, window);
        let (agents_mean, agents_peak) = in_flight(&agents, window);
        let hours = window as f64 / 3.6e12;
        let jobs = observed.jobs.len() as u64;
        let jobs_per_hour = (window > 0).then(|| jobs as f64 / hours);
        let job_time_mean_s = (jobs > 0)
            .then(|| observed.jobs.iter().map(|&j| j as f64).sum::<f64>() / jobs as f64 / 1e9);
        Agents {
            window_s: window as f64 / 1e9,
            trees_mean,
            trees_peak,
            agents_mean,
            agents_peak,
            jobs,
            jobs_per_hour,
            good_jobs_per_hour: jobs_per_hour
                .zip(verdict.job_goodput)
                .map(|(per_hour, share)| per_hour * share),
            job_time_mean_s,
            jobs_per_hour_per_user: job_time_mean_s
                .filter(|&mean| mean > 0.0)
                .map(|mean| 3600.0 / mean),
        }
    }
}

/// The mean number of `spans` in flight over a window of `window` ns
/// (their summed lengths over it), and the most at one instant (a span
/// ending as another starts does not overlap it).
fn in_flight(spans: &[(Nanos, Nanos)], window: Nanos) -> (f64, u64) {
    let mut edges: Vec<(Nanos, i64)> = Vec::with_capacity(spans.len() * 2);
    let mut busy: u128 = 0;
    for &(start, end) in spans {
        let end = end.max(start);
        busy += u128::from(end - start);
        edges.push((start, 1));
        edges.push((end, -1));
    }
    // Ends before starts at the same instant.
    edges.sort_unstable();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, step) in edges {
        now += step;
        peak = peak.max(now);
    }
    let mean = if window == 0 {
        0.0
    } else {
        busy as f64 / window as f64
    };
    (mean, peak.max(0) as u64)
}

/// The answer in agents: the knob's passing load and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Held {
    /// The largest passing load, in the knob's unit.
    pub load: f64,
    #[serde(flatten)]
    pub agents: Agents,
}

impl Held {
    /// "holds 53.0 concurrent agents (peak 54; 61.2 counting subagents)
    /// and 1,234 jobs/h (617 jobs in 1800.0 s; 1,200 jobs/h within the
    /// job SLOs) within SLO at sessions=53".
    pub fn sentence(&self, knob: Knob) -> String {
        let a = &self.agents;
        let mut text = format!(
            "holds {} concurrent agents (peak {}; {} counting subagents)",
            one_decimal(a.trees_mean),
            a.trees_peak,
            one_decimal(a.agents_mean)
        );
        if let Some(per_hour) = a.jobs_per_hour {
            text += &format!(
                " and {} jobs/h ({}",
                per_hour_text(per_hour),
                jobs_in_window(a.jobs, a.window_s)
            );
            if let Some(good) = a.good_jobs_per_hour {
                text += &format!("; {} jobs/h within the job SLOs", per_hour_text(good));
            }
            text += ")";
        }
        text + &format!(
            " within SLO at {}={}",
            knob.name(),
            knob.show_number(self.load)
        )
    }
}

/// "12 jobs in 1.8 s": what a rate per hour rests on.
pub fn jobs_in_window(jobs: u64, window_s: f64) -> String {
    format!(
        "{jobs} job{} in {window_s:.1} s",
        if jobs == 1 { "" } else { "s" }
    )
}

fn one_decimal(v: f64) -> String {
    format!("{v:.1}")
}

/// Jobs per hour, as a count: `1,234`; below 10, one decimal.
pub fn per_hour_text(v: f64) -> String {
    if v < 10.0 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::Flight;
    use crate::slo::Slo;

    const S: u64 = 1_000_000_000;

    fn flight(start: u64, end: u64, agents: &[(u64, u64)]) -> Flight {
        Flight {
            start: start * S,
            end: end * S,
            agents: agents.iter().map(|&(a, b)| (a * S, b * S)).collect(),
        }
    }

    #[test]
    fn spans_in_flight_mean_and_peak() {
        // [0,10) [5,15) [10,20): at most 2 at once (one ends as one starts).
        let spans = [(0, 10), (5, 15), (10, 20)];
        assert_eq!(in_flight(&spans, 20), (1.5, 2));
        assert_eq!(in_flight(&[], 0), (0.0, 0));
    }

    #[test]
    fn trees_agents_jobs_and_goodput_of_a_known_point() {
        // Two trees over 0..3600 s: the first one job of 3600 s whose
        // subagent ran 1000..2000 s beside it; the second a job of 1800 s.
        let observed = Observed {
            requests: Vec::new(),
            jobs: vec![3600 * S, 1800 * S],
            flights: vec![
                flight(0, 3600, &[(0, 3600), (1000, 2000)]),
                flight(1800, 3600, &[(1800, 3600)]),
            ],
        };
        let verdict = observed.judge(&Slo::parse("job_p50<=2000s").unwrap(), 0);
        let a = Agents::of(&observed, &verdict);
        assert_eq!(a.window_s, 3600.0);
        assert_eq!((a.trees_mean, a.trees_peak), (1.5, 2));
        assert_eq!((a.agents_mean, a.agents_peak), (1.5 + 1000.0 / 3600.0, 3));
        assert_eq!(a.jobs, 2);
        assert_eq!(a.jobs_per_hour, Some(2.0));
        // One of the two jobs meets job_p50<=2000s.
        assert_eq!(a.good_jobs_per_hour, Some(1.0));
        assert_eq!(a.job_time_mean_s, Some(2700.0));
        assert_eq!(a.jobs_per_hour_per_user, Some(3600.0 / 2700.0));

        // No job bound: no goodput of trees.
        let verdict = observed.judge(&Slo::parse("e2e_p50<=1s").unwrap(), 0);
        assert_eq!(Agents::of(&observed, &verdict).good_jobs_per_hour, None);
        // Nothing flew: no rate.
        let none = Agents::of(&Observed::default(), &verdict);
        assert_eq!(
            (none.jobs_per_hour, none.jobs_per_hour_per_user),
            (None, None)
        );
    }

    #[test]
    fn the_answer_in_agents_reads_as_a_sentence() {
        let held = Held {
            load: 53.0,
            agents: Agents {
                trees_mean: 52.96,
                trees_peak: 53,
                agents_mean: 61.24,
                window_s: 1800.0,
                jobs: 617,
                jobs_per_hour: Some(1234.4),
                good_jobs_per_hour: Some(1200.0),
                ..Agents::default()
            },
        };
        assert_eq!(
            held.sentence(Knob::Sessions),
            "holds 53.0 concurrent agents (peak 53; 61.2 counting subagents) and 1,234 jobs/h \
             (617 jobs in 1800.0 s; 1,200 jobs/h within the job SLOs) within SLO at sessions=53"
        );
        assert_eq!(jobs_in_window(1, 0.25), "1 job in 0.2 s");
        assert_eq!(per_hour_text(7.26), "7.3");
        assert_eq!(per_hour_text(1_234_567.0), "1,234,567");
    }
}
