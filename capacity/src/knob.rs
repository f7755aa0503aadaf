//! The load knob a capacity search turns: closed-loop sessions
//! (`--sessions N`) or the open-loop tree rate (`--arrival rate:R`), its
//! range (`--search sessions:1..256`, `--search rate:0.1..20`) and its
//! resolution (`--step`). Owns the knob's units (sessions; a rate in
//! milli-trees per second, so the search is integer arithmetic and
//! deterministic), how a value is shown and how it is set on a policy.
//! The grammar's errors name the flags they come from (`--search`,
//! `--step`), as the command shows them.

use arbor_engine::policy::{Arrival, Policy};
use arbor_error::Error;

use crate::search::{grid, Bounds, MAX_SWEEP_LOADS};

/// What the search turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// Closed loop: lanes, each running one tree at a time.
    Sessions,
    /// Open loop: trees per second, evenly spaced.
    Rate,
}

/// Milli-units of a rate per unit.
const MILLI: u64 = 1000;

impl Knob {
    pub fn name(self) -> &'static str {
        match self {
            Knob::Sessions => "sessions",
            Knob::Rate => "rate",
        }
    }

    /// A value as the table and the answer show it: `24`, `1.5`.
    pub fn show(self, value: u64) -> String {
        match self {
            Knob::Sessions => value.to_string(),
            Knob::Rate => format!("{}", value as f64 / MILLI as f64),
        }
    }

    /// A number in the knob's own unit as the table shows it.
    pub fn show_number(self, number: f64) -> String {
        match self {
            Knob::Sessions => format!("{number:.0}"),
            Knob::Rate => format!("{number}"),
        }
    }

    /// The value as a number in the knob's own unit (sessions, trees/s).
    pub fn number(self, value: u64) -> f64 {
        match self {
            Knob::Sessions => value as f64,
            Knob::Rate => value as f64 / MILLI as f64,
        }
    }

    /// The value of a number in the knob's own unit ([`Knob::number`]'s
    /// inverse, rounded to the knob's resolution).
    pub fn value_of(self, number: f64) -> u64 {
        match self {
            Knob::Sessions => number.round() as u64,
            Knob::Rate => (number * MILLI as f64).round() as u64,
        }
    }

    /// Sets the knob to `value` on `policy`.
    pub fn apply(self, value: u64, policy: &mut Policy) {
        self.set(value, &mut policy.sessions, &mut policy.arrival);
    }

    /// Sets the knob to `value` on a policy's two load settings, wherever
    /// they are held (a [`Policy`], or a front end's flags): sessions for
    /// the closed loop; no sessions and an even tree rate for the open
    /// loop.
    pub fn set(self, value: u64, sessions: &mut Option<u32>, arrival: &mut Arrival) {
        match self {
            Knob::Sessions => {
                *sessions = Some(u32::try_from(value).unwrap_or(u32::MAX));
            }
            Knob::Rate => {
                *sessions = None;
                *arrival = Arrival::Rate(self.number(value));
            }
        }
    }

    /// A value given as text (`8`, `1.5`), in the knob's units.
    fn parse_value(self, text: &str, what: &str) -> Result<u64, String> {
        let text = text.trim();
        let value = match self {
            Knob::Sessions => text.parse::<u64>().ok().filter(|&n| n <= u32::MAX as u64),
            Knob::Rate => text
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && *r >= 0.0 && *r <= 1.0e9)
                .map(|r| (r * MILLI as f64).round() as u64),
        };
        match value {
            Some(v) if v > 0 => Ok(v),
            _ => Err(format!(
                "{what} `{text}`: expected {}",
                match self {
                    Knob::Sessions => "a whole number of sessions, at least 1",
                    Knob::Rate => "a rate above 0 in trees per second (at most 3 decimals)",
                }
            )),
        }
    }

    /// The default range and resolution.
    fn defaults(self) -> (u64, u64, u64) {
        match self {
            Knob::Sessions => (1, 1024, 1),
            Knob::Rate => (100, 1_000 * MILLI, 100),
        }
    }
}

/// What to search: the knob, its range, where to start and the resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub knob: Knob,
    pub lo: u64,
    pub hi: u64,
    /// The first value probed (the knob's flag, else `lo`).
    pub start: u64,
    /// The search stops when the passing and failing values are this close.
    pub step: u64,
}

impl Space {
    /// The space the flags describe: `--search KNOB[:LO..HI]` (else the
    /// knob whose flag was given, else sessions), `--step` (else 1 session
    /// or 0.1 trees/s), started at the `sessions` (`--sessions N`) or the
    /// `arrival` rate (`--arrival rate:R`) given.
    pub fn of(
        search: Option<&str>,
        step: Option<&str>,
        sessions: Option<u32>,
        arrival: Arrival,
    ) -> Result<Space, String> {
        let given_rate = match arrival {
            Arrival::Rate(r) => Some(r),
            _ => None,
        };
        let (knob, range) = match search {
            Some(text) => parse_search(text)?,
            None if given_rate.is_some() && sessions.is_none() => (Knob::Rate, None),
            None => (Knob::Sessions, None),
        };
        if knob == Knob::Rate && sessions.is_some() {
            return Err(
                "--search rate: an open-loop search; drop --sessions (a closed loop)".to_string(),
            );
        }
        let (mut lo, mut hi, mut resolution) = knob.defaults();
        if let Some((l, h)) = range {
            (lo, hi) = (l, h);
        }
        if let Some(text) = step {
            resolution = knob.parse_value(text, "--step")?;
        }
        let given = match knob {
            Knob::Sessions => sessions.map(u64::from),
            Knob::Rate => given_rate.map(|r| (r * MILLI as f64).round() as u64),
        };
        let start = given.filter(|v| (lo..=hi).contains(v)).unwrap_or(lo);
        Ok(Space {
            knob,
            lo,
            hi,
            start,
            step: resolution,
        })
    }

    /// The range and resolution, as the search walks them.
    pub fn bounds(&self) -> Bounds {
        Bounds {
            lo: self.lo,
            hi: self.hi,
            step: self.step,
        }
    }

    /// Refuses a sweep of more than [`MAX_SWEEP_LOADS`] loads (each writes
    /// a probe directory), naming the flags that set them.
    pub fn check_sweep(&self) -> Result<(), Error> {
        let loads = grid(self.bounds()).len();
        if loads <= MAX_SWEEP_LOADS {
            return Ok(());
        }
        Err(Error::input(format!(
            "--sweep: {loads} loads from {} to {} at {}; at most {MAX_SWEEP_LOADS}: give a \
             coarser --step or a narrower --search",
            self.knob.show(self.lo),
            self.knob.show(self.hi),
            self.knob.show(self.step),
        )))
    }
}

/// `sessions`, `sessions:1..256`, `rate:0.1..20`.
fn parse_search(text: &str) -> Result<(Knob, Option<(u64, u64)>), String> {
    let (name, range) = match text.split_once(':') {
        Some((name, range)) => (name, Some(range)),
        None => (text, None),
    };
    let knob = match name.trim() {
        "sessions" => Knob::Sessions,
        "rate" => Knob::Rate,
        other => {
            return Err(format!(
                "--search `{text}`: unknown knob `{other}`; expected sessions[:LO..HI] or \
                 rate[:LO..HI] (e.g. sessions:1..256, rate:0.1..20)"
            ))
        }
    };
    let Some(range) = range else {
        return Ok((knob, None));
    };
    let Some((lo, hi)) = range.split_once("..") else {
        return Err(format!(
            "--search `{text}`: expected a range LO..HI after `{name}:` (e.g. {name}:{})",
            if knob == Knob::Sessions {
                "1..256"
            } else {
                "0.1..20"
            }
        ));
    };
    let lo = knob.parse_value(lo, "--search: the low end")?;
    let hi = knob.parse_value(hi, "--search: the high end")?;
    if lo > hi {
        return Err(format!(
            "--search `{text}`: the low end is above the high end"
        ));
    }
    Ok((knob, Some((lo, hi))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Space::of` with no `--sessions` and the default arrival.
    fn of(search: Option<&str>, step: Option<&str>) -> Result<Space, String> {
        Space::of(search, step, None, Arrival::Recorded)
    }

    #[test]
    fn the_knob_comes_from_search_or_the_flag_given() {
        let s = of(Some("sessions:2..64"), None).unwrap();
        assert_eq!(
            (s.knob, s.lo, s.hi, s.start, s.step),
            (Knob::Sessions, 2, 64, 2, 1)
        );
        let s = Space::of(None, None, Some(8), Arrival::Recorded).unwrap();
        assert_eq!((s.knob, s.start), (Knob::Sessions, 8));
        let s = Space::of(None, Some("0.5"), None, Arrival::Rate(2.0)).unwrap();
        assert_eq!((s.knob, s.start, s.step), (Knob::Rate, 2000, 500));
        assert_eq!(s.knob.show(1500), "1.5");
        let s = of(Some("rate:0.1..20"), None).unwrap();
        assert_eq!((s.lo, s.hi, s.start), (100, 20_000, 100));
    }

    #[test]
    fn bad_searches_say_what_was_expected() {
        for (search, step, needle) in [
            (Some("lanes:1..4"), None, "unknown knob `lanes`"),
            (Some("sessions:8"), None, "expected a range LO..HI"),
            (Some("sessions:9..4"), None, "low end is above"),
            (Some("sessions:0..4"), None, "at least 1"),
            (Some("rate:1..x"), None, "the high end `x`"),
            (None, Some("0"), "--step `0`"),
        ] {
            let e = of(search, step).unwrap_err();
            assert!(e.contains(needle), "{search:?}: {e}");
        }
        let e = Space::of(Some("rate"), None, Some(4), Arrival::Recorded).unwrap_err();
        assert!(e.contains("drop --sessions"), "{e}");
    }

    #[test]
    fn the_knob_sets_the_policy_and_a_sweep_is_capped() {
        let mut policy = Policy::default();
        Knob::Sessions.apply(24, &mut policy);
        assert_eq!(policy.sessions, Some(24));
        Knob::Rate.apply(1500, &mut policy);
        assert_eq!(
            (policy.sessions, policy.arrival),
            (None, Arrival::Rate(1.5))
        );
        let space = of(Some("sessions:1..10000"), None).unwrap();
        assert!(space.check_sweep().is_ok());
        let e = of(Some("sessions:1..20000"), None)
            .unwrap()
            .check_sweep()
            .unwrap_err();
        assert!(e.is_input());
        assert_eq!(
            e.to_string(),
            "--sweep: 20000 loads from 1 to 20000 at 1; at most 10000: give a coarser --step or \
             a narrower --search"
        );
    }
}
