//! The load knob a capacity search turns: closed-loop sessions
//! (`--sessions N`) or the open-loop tree rate (`--arrival rate:R`), its
//! range (`--search sessions:1..256`, `--search rate:0.1..20`) and its
//! resolution (`--step`). Owns the knob's units (sessions; a rate in
//! milli-trees per second, so the search is integer arithmetic and
//! deterministic), how a value is shown and how it is set on a policy.

use arbor_engine::policy::Arrival;

use crate::args::PolicyArgs;

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

    /// Sets the knob to `value` on `policy`.
    pub fn apply(self, value: u64, policy: &mut PolicyArgs) {
        match self {
            Knob::Sessions => {
                policy.sessions = Some(u32::try_from(value).unwrap_or(u32::MAX));
            }
            Knob::Rate => {
                policy.sessions = None;
                policy.arrival = Arrival::Rate(self.number(value));
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
    /// or 0.1 trees/s), started at `--sessions N` or `--arrival rate:R`
    /// when given.
    pub fn of(
        search: Option<&str>,
        step: Option<&str>,
        policy: &PolicyArgs,
    ) -> Result<Space, String> {
        let given_rate = match policy.arrival {
            Arrival::Rate(r) => Some(r),
            _ => None,
        };
        let (knob, range) = match search {
            Some(text) => parse_search(text)?,
            None if given_rate.is_some() && policy.sessions.is_none() => (Knob::Rate, None),
            None => (Knob::Sessions, None),
        };
        if knob == Knob::Rate && policy.sessions.is_some() {
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
            Knob::Sessions => policy.sessions.map(u64::from),
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
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        policy: PolicyArgs,
    }

    fn policy(args: &[&str]) -> PolicyArgs {
        let mut all = vec!["x"];
        all.extend_from_slice(args);
        Flags::parse_from(all).policy
    }

    #[test]
    fn the_knob_comes_from_search_or_the_flag_given() {
        let s = Space::of(Some("sessions:2..64"), None, &policy(&[])).unwrap();
        assert_eq!(
            (s.knob, s.lo, s.hi, s.start, s.step),
            (Knob::Sessions, 2, 64, 2, 1)
        );
        let s = Space::of(None, None, &policy(&["--sessions", "8"])).unwrap();
        assert_eq!((s.knob, s.start), (Knob::Sessions, 8));
        let s = Space::of(None, Some("0.5"), &policy(&["--arrival", "rate:2"])).unwrap();
        assert_eq!((s.knob, s.start, s.step), (Knob::Rate, 2000, 500));
        assert_eq!(s.knob.show(1500), "1.5");
        let s = Space::of(Some("rate:0.1..20"), None, &policy(&[])).unwrap();
        assert_eq!((s.lo, s.hi, s.start), (100, 20_000, 100));
    }

    #[test]
    fn bad_searches_say_what_was_expected() {
        for (search, step, flags, needle) in [
            (Some("lanes:1..4"), None, &[][..], "unknown knob `lanes`"),
            (Some("sessions:8"), None, &[], "expected a range LO..HI"),
            (Some("sessions:9..4"), None, &[], "low end is above"),
            (Some("sessions:0..4"), None, &[], "at least 1"),
            (Some("rate:1..x"), None, &[], "the high end `x`"),
            (None, Some("0"), &[], "--step `0`"),
            (
                Some("rate"),
                None,
                &["--sessions", "4"][..],
                "drop --sessions",
            ),
        ] {
            let e = Space::of(search, step, &policy(flags)).unwrap_err();
            assert!(e.contains(needle), "{search:?}: {e}");
        }
    }
}
