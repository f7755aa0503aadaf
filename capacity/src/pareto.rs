//! The Pareto of a sweep or a search's probes (docs/capacity.md,
//! "Pareto"): at each load, throughput as jobs per hour per replica (the
//! point's jobs per hour over the number of replicas the load was spread
//! over, 1 when single) against interactivity as jobs per hour per user
//! (3600 s over the mean job time), with each point marked dominated when
//! another is at least as good on both axes and better on one. Owns that
//! frontier; pure (the figures come from [`crate::agents`]).

use serde::Serialize;

/// One load on the Pareto.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParetoPoint {
    pub probe: usize,
    /// In the knob's unit.
    pub load: f64,
    /// Throughput: jobs per hour per replica.
    pub jobs_per_hour_per_replica: f64,
    /// Interactivity: jobs per hour per user.
    pub jobs_per_hour_per_user: f64,
    /// Whether the load met the SLOs.
    pub pass: bool,
    /// Another point is at least as good on both axes and better on one.
    pub dominated: bool,
}

/// `capacity.json`'s `pareto`: every probe that completed a job, by load.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pareto {
    /// The replicas each load was spread over (`--endpoint` repeated;
    /// 1 for one server or the virtual clock).
    pub replicas: usize,
    pub points: Vec<ParetoPoint>,
}

/// One probe's figures, as the Pareto takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub probe: usize,
    pub load: f64,
    pub jobs_per_hour: Option<f64>,
    pub jobs_per_hour_per_user: Option<f64>,
    pub pass: bool,
}

impl Pareto {
    /// The Pareto of `probes` over `replicas` (0 counts as 1); a probe
    /// with no job completed, or no window, has no point.
    pub fn of(probes: impl IntoIterator<Item = Figures>, replicas: usize) -> Pareto {
        let replicas = replicas.max(1);
        let mut points: Vec<ParetoPoint> = probes
            .into_iter()
            .filter_map(|f| {
                let (per_hour, per_user) = f.jobs_per_hour.zip(f.jobs_per_hour_per_user)?;
                Some(ParetoPoint {
                    probe: f.probe,
                    load: f.load,
                    jobs_per_hour_per_replica: per_hour / replicas as f64,
                    jobs_per_hour_per_user: per_user,
                    pass: f.pass,
                    dominated: false,
                })
            })
            .collect();
        points.sort_by(|a, b| a.load.total_cmp(&b.load).then(a.probe.cmp(&b.probe)));
        mark_dominated(&mut points);
        Pareto { replicas, points }
    }
}

/// Marks each point another dominates (at least as good on both axes,
/// better on one); equal points dominate neither.
fn mark_dominated(points: &mut [ParetoPoint]) {
    let dominated: Vec<bool> = points
        .iter()
        .map(|p| {
            points.iter().any(|q| {
                let (qx, qy) = (q.jobs_per_hour_per_replica, q.jobs_per_hour_per_user);
                let (px, py) = (p.jobs_per_hour_per_replica, p.jobs_per_hour_per_user);
                qx >= px && qy >= py && (qx > px || qy > py)
            })
        })
        .collect();
    for (p, d) in points.iter_mut().zip(dominated) {
        p.dominated = d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(probe: usize, load: f64, per_hour: f64, per_user: f64) -> Figures {
        Figures {
            probe,
            load,
            jobs_per_hour: Some(per_hour),
            jobs_per_hour_per_user: Some(per_user),
            pass: true,
        }
    }

    fn dominated(p: &Pareto) -> Vec<(f64, bool)> {
        p.points.iter().map(|p| (p.load, p.dominated)).collect()
    }

    #[test]
    fn the_frontier_keeps_the_points_nothing_beats_on_both_axes() {
        // Throughput grows with the load while interactivity falls, but
        // at 4 the throughput drops (overload): 4 is beaten by 2 on both.
        let p = Pareto::of(
            [
                figures(1, 1.0, 10.0, 10.0),
                figures(2, 2.0, 18.0, 9.0),
                figures(3, 4.0, 16.0, 4.0),
                figures(4, 3.0, 24.0, 8.0),
            ],
            1,
        );
        assert_eq!(
            dominated(&p),
            [(1.0, false), (2.0, false), (3.0, false), (4.0, true)]
        );
    }

    #[test]
    fn ties_and_one_better_axis() {
        // Equal points dominate neither; equal on one axis and better on
        // the other dominates.
        let p = Pareto::of(
            [
                figures(1, 1.0, 10.0, 5.0),
                figures(2, 2.0, 10.0, 5.0),
                figures(3, 3.0, 10.0, 4.0),
            ],
            1,
        );
        assert_eq!(dominated(&p), [(1.0, false), (2.0, false), (3.0, true)]);
    }

    #[test]
    fn throughput_is_per_replica_and_points_without_jobs_are_left_out() {
        let mut none = figures(2, 2.0, 0.0, 0.0);
        none.jobs_per_hour_per_user = None;
        let p = Pareto::of([figures(1, 1.0, 30.0, 5.0), none], 3);
        assert_eq!(p.replicas, 3);
        assert_eq!(p.points.len(), 1);
        assert_eq!(p.points[0].jobs_per_hour_per_replica, 10.0);
        assert_eq!(Pareto::of([figures(1, 1.0, 30.0, 5.0)], 0).replicas, 1);
    }
}
