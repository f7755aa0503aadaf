//! Policies: what a run changes on purpose (docs/policies.md).
//!
//! Owns the policy types, their textual forms (as typed on the command line,
//! parsed by `FromStr`, printed by `Display`) and the arithmetic of gap
//! transforms. The scheduler applies them; this module does not schedule.
//! Parse errors say what is wrong with a value; they never name a flag (the
//! CLI's value parsers do).

use std::fmt;
use std::str::FromStr;

use crate::error::{PolicyConflict, PolicyError};
use crate::model::{Anchor, Edge, EdgeKind, InputKind};
use crate::time::{millis_to_nanos, secs_to_nanos, Nanos, NANOS_PER_SEC};

/// Parts per million: fractional percentages without floats in state.
const PPM_PER_PERCENT: u64 = 10_000;

/// How a recorded gap is changed before it is replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GapTransform {
    #[default]
    Recorded,
    Zero,
    /// Scale by a percentage, held in parts per million (`pct:50` = 500_000).
    Scale {
        ppm: u64,
    },
    /// Clip to at most this long.
    Max(Nanos),
    /// Replace by a fixed gap.
    Fixed(Nanos),
}

impl GapTransform {
    pub fn apply(self, gap: Nanos) -> Nanos {
        match self {
            GapTransform::Recorded => gap,
            GapTransform::Zero => 0,
            GapTransform::Scale { ppm } => {
                let scaled = (gap as u128 * ppm as u128 + 500_000) / 1_000_000;
                scaled.min(u64::MAX as u128) as Nanos
            }
            GapTransform::Max(cap) => gap.min(cap),
            GapTransform::Fixed(fixed) => fixed,
        }
    }

    pub fn is_identity(self) -> bool {
        matches!(
            self,
            GapTransform::Recorded | GapTransform::Scale { ppm: 1_000_000 }
        )
    }
}

fn parse_percent(text: &str) -> Result<u64, PolicyError> {
    let value: f64 = text
        .parse()
        .map_err(|_| PolicyError::new(format!("expected a percentage, got `{text}`")))?;
    if !value.is_finite() || !(0.0..=1.0e6).contains(&value) {
        return Err(PolicyError::new(format!(
            "expected a percentage between 0 and 1000000, got `{text}`"
        )));
    }
    Ok((value * PPM_PER_PERCENT as f64).round() as u64)
}

fn parse_millis(text: &str) -> Result<Nanos, PolicyError> {
    text.parse::<f64>()
        .ok()
        .and_then(millis_to_nanos)
        .ok_or_else(|| {
            PolicyError::new(format!(
                "expected a non-negative number of milliseconds, got `{text}`"
            ))
        })
}

/// Units a duration may carry, and seconds per unit. A bare number is
/// seconds.
const DURATION_UNITS: [(&str, f64); 4] = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];

/// Parses a non-negative duration: a number of seconds (`10`, `0.25`) or a
/// number with a unit (`250ms`, `30s`, `5m`, `1h`; fractions allowed).
pub fn parse_duration(text: &str) -> Result<Nanos, PolicyError> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .filter(|&i| i > 0)
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let per_unit = if unit.is_empty() {
        1.0
    } else {
        match DURATION_UNITS.iter().find(|(name, _)| *name == unit) {
            Some((_, per_unit)) => *per_unit,
            None => {
                return Err(PolicyError::new(format!(
                    "unknown unit `{unit}` in `{text}`: expected ms, s, m or h (a bare number is seconds)"
                )))
            }
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        PolicyError::new(format!(
            "expected a duration such as 30, 0.5, 250ms, 30s, 5m or 1h, got `{text}`"
        ))
    })?;
    if !value.is_finite() {
        return Err(PolicyError::new(format!(
            "expected a finite duration, got `{text}`"
        )));
    }
    if value < 0.0 {
        return Err(PolicyError::new(format!(
            "expected a non-negative duration, got `{text}`"
        )));
    }
    secs_to_nanos(value * per_unit)
        .ok_or_else(|| PolicyError::new(format!("duration too long: `{text}`")))
}

fn parse_rate(text: &str) -> Result<f64, PolicyError> {
    match text.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 && rate <= 1.0e9 => Ok(rate),
        _ => Err(PolicyError::new(format!(
            "expected a positive rate in trees per second, got `{text}`"
        ))),
    }
}

impl GapTransform {
    fn parse_parts(text: &str) -> Result<Self, PolicyError> {
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (text, None),
        };
        match (kind, arg) {
            ("recorded", None) => Ok(GapTransform::Recorded),
            ("zero", None) => Ok(GapTransform::Zero),
            ("pct", Some(p)) => Ok(GapTransform::Scale {
                ppm: parse_percent(p)?,
            }),
            ("max", Some(ms)) => Ok(GapTransform::Max(parse_millis(ms)?)),
            ("fixed", Some(ms)) => Ok(GapTransform::Fixed(parse_millis(ms)?)),
            _ => Err(PolicyError::new(format!(
                "expected recorded, zero, pct:P, max:MS or fixed:MS, got `{text}`"
            ))),
        }
    }
}

/// `recorded|zero|pct:P|max:MS|fixed:MS`.
impl FromStr for GapTransform {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        GapTransform::parse_parts(text).map_err(|e| match e {
            PolicyError::Value(m) if !m.ends_with(&format!("`{text}`")) => {
                PolicyError::new(format!("{m} (in `{text}`)"))
            }
            other => other,
        })
    }
}

fn fmt_ms(ns: Nanos) -> String {
    format!("{}", ns as f64 / 1e6)
}

impl fmt::Display for GapTransform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GapTransform::Recorded => write!(f, "recorded"),
            GapTransform::Zero => write!(f, "zero"),
            GapTransform::Scale { ppm } => write!(f, "pct:{}", ppm as f64 / PPM_PER_PERCENT as f64),
            GapTransform::Max(ns) => write!(f, "max:{}", fmt_ms(ns)),
            GapTransform::Fixed(ns) => write!(f, "fixed:{}", fmt_ms(ns)),
        }
    }
}

/// The class of a gap. An `End`-anchored edge between turns of one agent
/// is classed by what the next turn's input is (tool, think, other); a
/// spawn or join edge is classed by its kind; a `Start`-anchored edge (a
/// turn sent while its predecessor was in flight) is `Concurrent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GapClass {
    Tool,
    Think,
    Other,
    Spawn,
    Join,
    Concurrent,
}

impl GapClass {
    pub fn as_str(self) -> &'static str {
        match self {
            GapClass::Tool => "tool",
            GapClass::Think => "think",
            GapClass::Other => "other",
            GapClass::Spawn => "spawn",
            GapClass::Join => "join",
            GapClass::Concurrent => "concurrent",
        }
    }

    /// The class of a gap before a turn whose input is `next_input`.
    pub fn of(next_input: InputKind) -> Self {
        match next_input {
            InputKind::ToolResult => GapClass::Tool,
            InputKind::UserText => GapClass::Think,
            InputKind::Unknown => GapClass::Other,
        }
    }

    /// The class of `edge`'s gap, the edge leading to a turn whose input
    /// is `next_input`.
    pub fn of_edge(edge: &Edge, next_input: InputKind) -> Self {
        match (edge.anchor, edge.kind) {
            (Anchor::Start, _) => GapClass::Concurrent,
            (Anchor::End, EdgeKind::Spawn) => GapClass::Spawn,
            (Anchor::End, EdgeKind::Join) => GapClass::Join,
            (Anchor::End, EdgeKind::Sequence) => GapClass::of(next_input),
        }
    }
}

/// `--gap-scale F`: every gap of every class multiplied by `F >= 0`, held
/// in parts per million (`F = 1` is the identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapScale {
    pub ppm: u64,
}

impl Default for GapScale {
    fn default() -> Self {
        GapScale { ppm: 1_000_000 }
    }
}

impl GapScale {
    pub fn apply(self, gap: Nanos) -> Nanos {
        GapTransform::Scale { ppm: self.ppm }.apply(gap)
    }

    pub fn is_identity(self) -> bool {
        self.ppm == 1_000_000
    }
}

/// A factor `F`: a finite number from 0 to 1000000 (`0.5`, `2`, `0`).
impl FromStr for GapScale {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && (0.0..=1.0e6).contains(&f) => Ok(GapScale {
                ppm: (f * 1e6).round() as u64,
            }),
            _ => Err(PolicyError::new(format!(
                "expected a factor from 0 to 1000000 (1 keeps every gap as recorded), got `{text}`"
            ))),
        }
    }
}

impl fmt::Display for GapScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ppm as f64 / 1e6)
    }
}

/// When each tree (play) arrives in an open-loop run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Arrival {
    /// Every tree at time 0.
    Immediate,
    /// At the tree's recorded arrival.
    #[default]
    Recorded,
    /// Exponential inter-arrival times with this mean rate (trees/s), seeded.
    Poisson(f64),
    /// Evenly spaced at this rate (trees/s).
    Rate(f64),
}

impl FromStr for Arrival {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once(':') {
            None if text == "immediate" => Ok(Arrival::Immediate),
            None if text == "recorded" => Ok(Arrival::Recorded),
            Some(("poisson", rate)) => Ok(Arrival::Poisson(parse_rate(rate)?)),
            Some(("rate", rate)) => Ok(Arrival::Rate(parse_rate(rate)?)),
            _ => Err(PolicyError::new(format!(
                "expected immediate, recorded, poisson:RATE or rate:RATE, got `{text}`"
            ))),
        }
    }
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arrival::Immediate => write!(f, "immediate"),
            Arrival::Recorded => write!(f, "recorded"),
            Arrival::Poisson(r) => write!(f, "poisson:{r}"),
            Arrival::Rate(r) => write!(f, "rate:{r}"),
        }
    }
}

/// Default window over which copies are spread when no span is given.
pub const DEFAULT_STAGGER_SPAN: Nanos = 60 * NANOS_PER_SEC;

/// How copy `k` of a tree is delayed relative to copy 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stagger {
    #[default]
    None,
    /// Copy `k` of `K` starts `k * span / K` later.
    Even { span: Nanos },
    /// Copy `k > 0` starts a seeded uniform time in `[0, span)` later.
    Random { span: Nanos },
}

impl FromStr for Stagger {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (kind, span) = match text.split_once(':') {
            Some((k, s)) => (k, Some(parse_duration(s)?)),
            None => (text, None),
        };
        let span = span.unwrap_or(DEFAULT_STAGGER_SPAN);
        match kind {
            "none" if span == DEFAULT_STAGGER_SPAN => Ok(Stagger::None),
            "even" => Ok(Stagger::Even { span }),
            "random" => Ok(Stagger::Random { span }),
            _ => Err(PolicyError::new(format!(
                "expected none, even[:SPAN] or random[:SPAN] (SPAN a duration, default 60 s), got `{text}`"
            ))),
        }
    }
}

impl fmt::Display for Stagger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Stagger::None => write!(f, "none"),
            Stagger::Even { span } => write!(f, "even:{}", span as f64 / 1e9),
            Stagger::Random { span } => write!(f, "random:{}", span as f64 / 1e9),
        }
    }
}

/// `--shard I/N`: shard `index` (from 0) of `count` keeps a stripe of the
/// work. Open-loop plays go by their index in the unsharded plan (every
/// tree times `copies`, copy-major), lanes by their index, both modulo
/// `count`: a play (a tree's copy) is never split, and the plan, the deal
/// and every seeded stream stay the unsharded run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether item `k` (a play of the open-loop plan, or a lane) is this
    /// shard's.
    pub fn keeps(&self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }
}

impl FromStr for Shard {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let expected = || {
            PolicyError::new(format!(
                "expected I/N with 0 <= I < N (I the shard's index from 0, N the shard count), got `{text}`"
            ))
        };
        let (index, count) = text.split_once('/').ok_or_else(expected)?;
        let index: u32 = index.trim().parse().map_err(|_| expected())?;
        let count: u32 = count.trim().parse().map_err(|_| expected())?;
        if count == 0 || index >= count {
            return Err(expected());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Where, in its recorded span, a lane's first tree is entered (as
/// fractions in parts per million of the span of its turn starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartWindow {
    pub min_ppm: u32,
    pub max_ppm: u32,
}

impl FromStr for StartWindow {
    type Err = PolicyError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || {
            PolicyError::new(format!(
                "expected MIN:MAX with 0 <= MIN <= MAX <= 1, got `{text}`"
            ))
        };
        let (min, max) = text.split_once(':').ok_or_else(bad)?;
        let fraction = |t: &str| -> Result<u32, PolicyError> {
            match t.trim().parse::<f64>() {
                Ok(v) if (0.0..=1.0).contains(&v) => Ok((v * 1e6).round() as u32),
                _ => Err(bad()),
            }
        };
        let (min_ppm, max_ppm) = (fraction(min)?, fraction(max)?);
        if min_ppm > max_ppm {
            return Err(bad());
        }
        Ok(StartWindow { min_ppm, max_ppm })
    }
}

impl fmt::Display for StartWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}",
            self.min_ppm as f64 / 1e6,
            self.max_ppm as f64 / 1e6
        )
    }
}

/// Default cap on how far before the profiling start warmups are spread.
pub const DEFAULT_WARMUP_SPREAD: Nanos = 10 * NANOS_PER_SEC;

/// Everything the scheduler needs to know about a run besides the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Transform of tool gaps (before a tool-result input).
    pub tool_time: GapTransform,
    /// Transform of think gaps (before user text); `pct:P` from
    /// `--think-time-pct P`.
    pub think_time: GapTransform,
    /// Transform of other gaps (before an input of unknown kind).
    pub other_time: GapTransform,
    /// Transform of spawn gaps, after their input class's.
    pub spawn_time: GapTransform,
    /// Transform of join gaps, after their input class's.
    pub join_time: GapTransform,
    /// Scales every gap of every class, `Start`-anchored ones too, after
    /// the transforms above.
    pub gap_scale: GapScale,
    pub arrival: Arrival,
    /// Each tree is played this many times (at least 1).
    pub copies: u32,
    pub stagger: Stagger,
    /// At most this many requests in flight; more wait in a FIFO.
    pub max_inflight: Option<u32>,
    /// Closed loop: this many lanes, each running one tree at a time.
    pub sessions: Option<u32>,
    /// With `sessions`, lanes cycle through their share until the duration.
    pub loop_lanes: bool,
    /// Global idle-gap cap.
    pub idle_gap_cap: Option<Nanos>,
    /// After this, no new turn is sent.
    pub duration: Option<Nanos>,
    /// In-flight requests at the end of `duration` get this long, then are
    /// cancelled.
    pub grace: Nanos,
    pub seed: u64,
    /// Closed loop only: each lane enters its first tree at a seeded `t*`
    /// in this window, warms the agents alive there, and all lanes start
    /// profiling together (the AgentX recipe).
    pub start_window: Option<StartWindow>,
    /// Warmups are sent at their recorded lead before `t*`, capped at this.
    pub warmup_spread: Nanos,
    /// With a start window: the accelerated cache warmup continues each
    /// lane's first tree from `t*` for this many requests (children
    /// count), with no gaps and one output token, before profiling starts
    /// (`--warmup-requests-per-lane`; 0: none).
    pub warmup_requests_per_lane: u32,
    /// With a start window: the same accelerated warmup, bounded by time
    /// instead of a count (`--cache-warmup-duration`, AIPerf 0.13's
    /// form): no accelerated request is released after this long.
    pub cache_warmup_duration: Option<Nanos>,
    /// Per-tree idle watchdog: a tree with nothing in flight never waits
    /// longer than this for its next turn; its own pending timers move
    /// earlier (the InferenceX harness uses 300 s).
    pub tree_idle_cap: Option<Nanos>,
    /// `--shard I/N`: this process plays one stripe of the work.
    pub shard: Option<Shard>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            tool_time: GapTransform::Recorded,
            think_time: GapTransform::Recorded,
            other_time: GapTransform::Recorded,
            spawn_time: GapTransform::Recorded,
            join_time: GapTransform::Recorded,
            gap_scale: GapScale::default(),
            arrival: Arrival::Recorded,
            copies: 1,
            stagger: Stagger::None,
            max_inflight: None,
            sessions: None,
            loop_lanes: false,
            idle_gap_cap: None,
            duration: None,
            grace: 30 * NANOS_PER_SEC,
            seed: 0,
            start_window: None,
            warmup_spread: DEFAULT_WARMUP_SPREAD,
            warmup_requests_per_lane: 0,
            cache_warmup_duration: None,
            tree_idle_cap: None,
            shard: None,
        }
    }
}

impl Policy {
    /// Checks combinations that make no sense; single values are checked
    /// when parsed.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let conflict = if self.copies == 0 {
            PolicyConflict::NoCopies
        } else if self.max_inflight == Some(0) {
            PolicyConflict::NoInflight
        } else if self.sessions == Some(0) {
            PolicyConflict::NoSessions
        } else if self.loop_lanes && self.sessions.is_none() {
            PolicyConflict::LoopWithoutSessions
        } else if self.sessions.is_some() && self.stagger != Stagger::None {
            PolicyConflict::StaggerWithSessions
        } else if self.start_window.is_some() && self.sessions.is_none() {
            PolicyConflict::StartWindowWithoutSessions
        } else if self.loop_lanes && self.duration.is_none() {
            PolicyConflict::LoopWithoutDuration
        } else if self.warmup_requests_per_lane > 0 && self.cache_warmup_duration.is_some() {
            PolicyConflict::CacheWarmupCountAndDuration
        } else if self.accelerates() && self.start_window.is_none() {
            PolicyConflict::CacheWarmupWithoutStartWindow
        } else if self.shard.is_some() && self.idle_gap_cap.is_some() {
            PolicyConflict::IdleCapWithShard
        } else if self.shard.is_some() && self.start_window.is_some() {
            PolicyConflict::StartWindowWithShard
        } else {
            return Ok(());
        };
        Err(conflict.into())
    }

    /// Whether the accelerated cache warmup is on (a count above 0, or a
    /// duration above 0).
    pub fn accelerates(&self) -> bool {
        self.warmup_requests_per_lane > 0 || self.cache_warmup_duration.is_some_and(|d| d > 0)
    }

    /// The transformed gap before a turn whose input is `next_input`: the
    /// transform of its input class (tool, think or other).
    pub fn transform_gap(&self, gap: Nanos, next_input: InputKind) -> Nanos {
        match GapClass::of(next_input) {
            GapClass::Tool => self.tool_time.apply(gap),
            GapClass::Think => self.think_time.apply(gap),
            _ => self.other_time.apply(gap),
        }
    }

    /// The gap `edge` is replayed with, the edge leading to a turn whose
    /// input is `next_input`. An `End`-anchored gap takes its input
    /// class's transform, then a spawn or join edge its kind's; a
    /// `Start`-anchored gap spans the previous request's service time, so
    /// only `gap_scale` changes it. Every gap is then scaled by
    /// `gap_scale`. With the defaults every gap is as recorded.
    pub fn edge_gap(&self, edge: &Edge, next_input: InputKind) -> Nanos {
        let gap = match edge.anchor {
            Anchor::Start => edge.gap,
            Anchor::End => self.transform_gap(edge.gap, next_input),
        };
        let gap = match (edge.anchor, edge.kind) {
            (Anchor::End, EdgeKind::Spawn) => self.spawn_time.apply(gap),
            (Anchor::End, EdgeKind::Join) => self.join_time.apply(gap),
            _ => gap,
        };
        self.gap_scale.apply(gap)
    }

    /// A percentage `P` as the transform `pct:P` (`--think-time-pct P`).
    pub fn think_pct(percent: &str) -> Result<GapTransform, PolicyError> {
        Ok(GapTransform::Scale {
            ppm: parse_percent(percent)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_transforms_parse_and_apply() {
        let s = NANOS_PER_SEC;
        assert_eq!("zero".parse::<GapTransform>().unwrap().apply(5 * s), 0);
        assert_eq!(
            "pct:50".parse::<GapTransform>().unwrap().apply(5 * s),
            2_500_000_000
        );
        assert_eq!("pct:12.5".parse::<GapTransform>().unwrap().apply(8 * s), s);
        assert_eq!("max:1000".parse::<GapTransform>().unwrap().apply(5 * s), s);
        assert_eq!(
            "max:1000".parse::<GapTransform>().unwrap().apply(s / 2),
            s / 2
        );
        assert_eq!(
            "fixed:250".parse::<GapTransform>().unwrap().apply(5 * s),
            s / 4
        );
        assert_eq!("recorded".parse::<GapTransform>().unwrap().apply(7), 7);
        for bad in ["pct", "pct:x", "max:-1", "fixed:nan", "bogus", "zero:1"] {
            assert!(
                bad.parse::<GapTransform>().is_err(),
                "{bad} should be rejected"
            );
        }
    }

    #[test]
    fn gap_scale_parses_applies_and_composes() {
        let s = NANOS_PER_SEC;
        let half: GapScale = "0.5".parse().unwrap();
        assert_eq!(half.apply(3 * s), 1_500_000_000);
        assert_eq!(half.to_string(), "0.5");
        assert!("1".parse::<GapScale>().unwrap().is_identity());
        assert_eq!("0".parse::<GapScale>().unwrap().apply(9 * s), 0);
        for bad in ["-1", "x", "nan", "inf", "2e6", ""] {
            assert!(bad.parse::<GapScale>().is_err(), "{bad} should be rejected");
        }
        let edge = |anchor, kind| Edge {
            from: 0,
            to: 1,
            anchor,
            gap: 4 * s,
            kind,
        };
        let policy = Policy {
            tool_time: GapTransform::Scale { ppm: 500_000 },
            other_time: GapTransform::Fixed(s),
            spawn_time: GapTransform::Zero,
            join_time: GapTransform::Max(s / 2),
            gap_scale: half,
            ..Policy::default()
        };
        let tool = InputKind::ToolResult;
        let cases = [
            (Anchor::End, EdgeKind::Sequence, tool, s, GapClass::Tool),
            (
                Anchor::End,
                EdgeKind::Sequence,
                InputKind::UserText,
                2 * s,
                GapClass::Think,
            ),
            (
                Anchor::End,
                EdgeKind::Sequence,
                InputKind::Unknown,
                s / 2,
                GapClass::Other,
            ),
            (Anchor::End, EdgeKind::Spawn, tool, 0, GapClass::Spawn),
            (Anchor::End, EdgeKind::Join, tool, s / 4, GapClass::Join),
            (
                Anchor::Start,
                EdgeKind::Join,
                tool,
                2 * s,
                GapClass::Concurrent,
            ),
        ];
        for (anchor, kind, input, gap, class) in cases {
            let e = edge(anchor, kind);
            assert_eq!(
                policy.edge_gap(&e, input),
                gap,
                "{anchor:?} {kind:?} {input:?}"
            );
            assert_eq!(GapClass::of_edge(&e, input), class);
            assert_eq!(Policy::default().edge_gap(&e, input), 4 * s);
        }
    }

    #[test]
    fn arrival_and_stagger_round_trip() {
        for text in ["immediate", "recorded", "poisson:2.5", "rate:10"] {
            assert_eq!(text.parse::<Arrival>().unwrap().to_string(), text);
        }
        assert!("poisson:0".parse::<Arrival>().is_err());
        assert!("rate:-1".parse::<Arrival>().is_err());
        assert_eq!(
            "even".parse::<Stagger>().unwrap(),
            Stagger::Even {
                span: DEFAULT_STAGGER_SPAN
            }
        );
        assert_eq!(
            "random:2".parse::<Stagger>().unwrap(),
            Stagger::Random {
                span: 2 * NANOS_PER_SEC
            }
        );
        assert!("none:3".parse::<Stagger>().is_err());
    }

    #[test]
    fn durations_take_units_and_a_bare_number_is_seconds() {
        let s = NANOS_PER_SEC;
        assert_eq!(parse_duration("30").unwrap(), 30 * s);
        assert_eq!(parse_duration("0.25").unwrap(), s / 4);
        assert_eq!(parse_duration("1e1").unwrap(), 10 * s);
        assert_eq!(parse_duration("250ms").unwrap(), s / 4);
        assert_eq!(parse_duration("30s").unwrap(), 30 * s);
        assert_eq!(parse_duration("5m").unwrap(), 300 * s);
        assert_eq!(parse_duration("1.5m").unwrap(), 90 * s);
        assert_eq!(parse_duration("1h").unwrap(), 3600 * s);
        for (bad, why) in [
            ("-4", "non-negative"),
            ("-1s", "non-negative"),
            ("NaN", "finite"),
            ("inf", "finite"),
            ("5x", "unknown unit `x`"),
            ("5min", "unknown unit `min`"),
            ("soon", "expected a duration"),
            ("", "expected a duration"),
            ("s", "expected a duration"),
        ] {
            let e = parse_duration(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(!e.contains("--"), "no flag spelling: {e}");
        }
        assert_eq!(
            "even:2m".parse::<Stagger>().unwrap(),
            Stagger::Even {
                span: 120 * NANOS_PER_SEC
            }
        );
    }

    #[test]
    fn conflicts_name_no_flag() {
        let policy = Policy {
            loop_lanes: true,
            ..Policy::default()
        };
        assert_eq!(
            policy.validate(),
            Err(PolicyError::Conflict(PolicyConflict::LoopWithoutSessions))
        );
    }

    #[test]
    fn gaps_are_classed_by_the_next_input() {
        let policy = Policy {
            tool_time: GapTransform::Zero,
            think_time: GapTransform::Scale { ppm: 2_000_000 },
            ..Policy::default()
        };
        assert_eq!(policy.transform_gap(10, InputKind::ToolResult), 0);
        assert_eq!(policy.transform_gap(10, InputKind::UserText), 20);
        assert_eq!(policy.transform_gap(10, InputKind::Unknown), 10);
    }
}

// ----- planning: pure functions of the policy types ------------------------

impl Arrival {
    /// Arrival offsets of `count` arrivals (in index order) under this
    /// process, seeded by `seed`; `None` for `recorded`, which uses each
    /// tree's own arrival.
    pub fn offsets(&self, count: usize, seed: u64) -> Option<Vec<crate::time::Nanos>> {
        use crate::rng::{stream, Purpose};
        use crate::time::{Nanos, NANOS_PER_SEC};
        use rand_distr::{Distribution, Exp};

        match *self {
            Arrival::Recorded => None,
            Arrival::Immediate => Some(vec![0; count]),
            Arrival::Rate(rate) => {
                let interval = (NANOS_PER_SEC as f64 / rate).round() as Nanos;
                Some(
                    (0..count as u64)
                        .map(|i| i.saturating_mul(interval))
                        .collect(),
                )
            }
            Arrival::Poisson(rate) => {
                let mut rng = stream(seed, Purpose::Arrival, 0, 0, 0);
                let exp = Exp::new(rate).ok()?;
                let mut at: Nanos = 0;
                let mut out = Vec::with_capacity(count);
                for i in 0..count {
                    if i > 0 {
                        let gap: f64 = exp.sample(&mut rng);
                        at = at.saturating_add((gap * NANOS_PER_SEC as f64).round() as Nanos);
                    }
                    out.push(at);
                }
                Some(out)
            }
        }
    }
}

impl Stagger {
    /// How much later than copy 0 copy `copy` (of `copies`) of tree `tree`
    /// starts, seeded by `seed`.
    pub fn offset(&self, tree: u32, copy: u32, copies: u32, seed: u64) -> crate::time::Nanos {
        use crate::rng::{stream, Purpose};
        use crate::time::Nanos;
        use rand::Rng;

        match *self {
            Stagger::None => 0,
            Stagger::Even { span } => ((span as u128 * copy as u128) / copies as u128) as Nanos,
            Stagger::Random { span } if copy > 0 && span > 0 => {
                stream(seed, Purpose::Stagger, u64::from(tree), u64::from(copy), 0)
                    .random_range(0..span)
            }
            Stagger::Random { .. } => 0,
        }
    }
}

#[cfg(test)]
mod planning_tests {
    use super::*;
    use crate::time::{Nanos, NANOS_PER_SEC};

    #[test]
    fn arrival_offsets_follow_the_process() {
        let s = NANOS_PER_SEC;
        assert_eq!(Arrival::Recorded.offsets(3, 0), None);
        assert_eq!(Arrival::Immediate.offsets(3, 0), Some(vec![0, 0, 0]));
        assert_eq!(
            Arrival::Rate(4.0).offsets(4, 0),
            Some(vec![0, s / 4, s / 2, 3 * s / 4])
        );
        assert_eq!(
            Arrival::Poisson(2.0).offsets(4, 42),
            Some(vec![0, 1_202_561_415, 1_750_145_556, 2_376_129_781])
        );
        assert_eq!(Arrival::Poisson(2.0).offsets(0, 42), Some(vec![]));
    }

    #[test]
    fn stagger_offsets_spread_copies() {
        let s = NANOS_PER_SEC;
        assert_eq!(Stagger::None.offset(0, 3, 4, 0), 0);
        let even = Stagger::Even { span: 60 * s };
        let offsets: Vec<Nanos> = (0..4).map(|copy| even.offset(5, copy, 4, 0)).collect();
        assert_eq!(offsets, vec![0, 15 * s, 30 * s, 45 * s]);
        let random = Stagger::Random { span: 10 * s };
        assert_eq!(random.offset(0, 0, 4, 7), 0, "copy 0 is never delayed");
        assert_eq!(random.offset(0, 1, 4, 7), 8_258_934_982);
        assert_eq!(random.offset(0, 1, 4, 7), random.offset(0, 1, 4, 7));
        assert_eq!(Stagger::Random { span: 0 }.offset(0, 1, 4, 7), 0);
    }
}
