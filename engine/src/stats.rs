//! Distributions of integer measurements, for reports.
//!
//! Owns [`Distribution`]: count, mean, nearest-rank percentiles and max of
//! `u64` values (nanoseconds or tokens), and how they are printed. The unit
//! is a type parameter: [`Seconds`] values are nanoseconds shown as seconds
//! (JSON keys `mean_s`, `p50_s`, ...), [`Count`] values are plain numbers
//! (keys `mean`, `p50`, ...). Computing never touches a float except the
//! mean, so the same values always give the same report. Its JSON Schema
//! (for docs/schema/) is written by hand beside its `Serialize`, from the
//! same key list.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::time::nanos_to_secs;

/// How a distribution's values are shown.
pub trait Unit {
    /// Appended to every JSON key but `count` (`"_s"` gives `p50_s`).
    const SUFFIX: &'static str;
    /// The unit's name in a JSON Schema (`DistributionSeconds`).
    const NAME: &'static str;
    /// A value as shown (JSON and text).
    type Shown: Serialize + JsonSchema + Copy + fmt::Display;
    fn show(raw: u64) -> Self::Shown;
    /// The mean (of raw values) as shown.
    fn show_mean(raw_mean: f64) -> f64;
    /// Writes a shown value for people (`1.500 s`, `1200`).
    fn write(f: &mut fmt::Formatter<'_>, raw: u64) -> fmt::Result;
    fn write_mean(f: &mut fmt::Formatter<'_>, raw_mean: f64) -> fmt::Result;
}

/// Values are nanoseconds, shown as seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds;

/// Values are plain numbers (tokens, blocks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count;

impl Unit for Seconds {
    const SUFFIX: &'static str = "_s";
    const NAME: &'static str = "Seconds";
    type Shown = f64;
    fn show(raw: u64) -> f64 {
        nanos_to_secs(raw)
    }
    fn show_mean(raw_mean: f64) -> f64 {
        raw_mean / 1e9
    }
    fn write(f: &mut fmt::Formatter<'_>, raw: u64) -> fmt::Result {
        write!(f, "{:.3} s", nanos_to_secs(raw))
    }
    fn write_mean(f: &mut fmt::Formatter<'_>, raw_mean: f64) -> fmt::Result {
        write!(f, "{:.3} s", raw_mean / 1e9)
    }
}

impl Unit for Count {
    const SUFFIX: &'static str = "";
    const NAME: &'static str = "Count";
    type Shown = u64;
    fn show(raw: u64) -> u64 {
        raw
    }
    fn show_mean(raw_mean: f64) -> f64 {
        raw_mean
    }
    fn write(f: &mut fmt::Formatter<'_>, raw: u64) -> fmt::Result {
        write!(f, "{raw}")
    }
    fn write_mean(f: &mut fmt::Formatter<'_>, raw_mean: f64) -> fmt::Result {
        write!(f, "{raw_mean:.1}")
    }
}

/// Count, mean, nearest-rank percentiles and max of some `u64` values, in
/// the raw unit (nanoseconds for [`Seconds`]). An empty distribution is all
/// zeros.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distribution<U> {
    pub count: u64,
    /// Arithmetic mean of the raw values.
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    unit: PhantomData<U>,
}

/// The names of the values after the mean, as in JSON (before the unit's
/// suffix) and text.
const RANKS: [&str; 5] = ["p50", "p90", "p95", "p99", "max"];

/// The nearest-rank `p`-quantile (`0 < p <= 1`) of sorted values: the
/// smallest value with at least `p * n` values at or below it. `0` when
/// there are none.
pub fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[nearest_rank_index(sorted.len(), p)]
}

/// The nearest-rank ends of the central `level` (e.g. 0.9: the 5th and
/// the 95th percentiles) of sorted values; `(0, 0)` when there are none.
/// The ends of a percentile interval over resampled readings.
pub fn central_range(sorted: &[u64], level: f64) -> (u64, u64) {
    let tail = (1.0 - level) / 2.0;
    (nearest_rank(sorted, tail), nearest_rank(sorted, 1.0 - tail))
}

/// The index of the nearest-rank `p`-quantile among `n > 0` sorted values
/// (the rule of [`nearest_rank`], for values that are not integers).
pub fn nearest_rank_index(n: usize, p: f64) -> usize {
    ((p * n as f64).ceil() as usize).clamp(1, n) - 1
}

impl<U: Unit> Distribution<U> {
    /// The distribution of `values` (sorted in place).
    pub fn of(values: &mut [u64]) -> Self {
        values.sort_unstable();
        Self::of_sorted(values)
    }

    /// The distribution of values already sorted ascending.
    pub fn of_sorted(sorted: &[u64]) -> Self {
        debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
        let n = sorted.len();
        let sum: u128 = sorted.iter().map(|&v| v as u128).sum();
        Distribution {
            count: n as u64,
            mean: if n == 0 { 0.0 } else { sum as f64 / n as f64 },
            p50: nearest_rank(sorted, 0.50),
            p90: nearest_rank(sorted, 0.90),
            p95: nearest_rank(sorted, 0.95),
            p99: nearest_rank(sorted, 0.99),
            max: sorted.last().copied().unwrap_or(0),
            unit: PhantomData,
        }
    }

    /// The mean in the shown unit.
    pub fn mean_shown(&self) -> f64 {
        U::show_mean(self.mean)
    }

    /// A raw value of this distribution (e.g. `d.p90`) in the shown unit.
    pub fn shown(&self, raw: u64) -> U::Shown {
        U::show(raw)
    }

    /// The raw values after the mean, each with its name in [`RANKS`].
    fn ranks(&self) -> [(&'static str, u64); 5] {
        let values = [self.p50, self.p90, self.p95, self.p99, self.max];
        std::array::from_fn(|i| (RANKS[i], values[i]))
    }
}

impl<U: Unit> Serialize for Distribution<U> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let key = |name: &str| format!("{name}{}", U::SUFFIX);
        let mut map = serializer.serialize_map(Some(7))?;
        map.serialize_entry("count", &self.count)?;
        map.serialize_entry(&key("mean"), &self.mean_shown())?;
        for (name, raw) in self.ranks() {
            map.serialize_entry(&key(name), &U::show(raw))?;
        }
        map.end()
    }
}

/// The object [`Serialize`] writes: `count`, the mean (a number) and the
/// ranks (the unit's shown type), every key present.
impl<U: Unit> JsonSchema for Distribution<U> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("Distribution{}", U::NAME))
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let key = |name: &str| format!("{name}{}", U::SUFFIX);
        let mut properties = serde_json::Map::new();
        properties.insert("count".into(), generator.subschema_for::<u64>().into());
        properties.insert(key("mean"), generator.subschema_for::<f64>().into());
        let shown: serde_json::Value = generator.subschema_for::<U::Shown>().into();
        for name in RANKS {
            properties.insert(key(name), shown.clone());
        }
        let required: Vec<String> = properties.keys().cloned().collect();
        json_schema!({
            "description": "Count, mean, nearest-rank percentiles and max (all zeros when empty).",
            "type": "object",
            "properties": properties,
            "required": required,
        })
    }
}

/// `mean M, p50 A, p90 B, p95 C, p99 D, max E` in the shown unit.
impl<U: Unit> fmt::Display for Distribution<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("mean ")?;
        U::write_mean(f, self.mean)?;
        for (name, raw) in self.ranks() {
            write!(f, ", {name} ")?;
            U::write(f, raw)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NANOS_PER_SEC;

    #[test]
    fn nearest_rank_percentiles_by_hand() {
        // 1..=10: p50 is the 5th value, p90 the 9th, p95 and p99 the 10th.
        let mut values: Vec<u64> = (1..=10).rev().collect();
        let d = Distribution::<Count>::of(&mut values);
        assert_eq!(d.count, 10);
        assert_eq!(d.mean, 5.5);
        assert_eq!((d.p50, d.p90, d.p95, d.p99, d.max), (5, 9, 10, 10, 10));

        // 1..=100: ranks are exact.
        let mut values: Vec<u64> = (1..=100).collect();
        let d = Distribution::<Count>::of(&mut values);
        assert_eq!((d.p50, d.p90, d.p95, d.p99, d.max), (50, 90, 95, 99, 100));

        // One value is every percentile.
        let d = Distribution::<Count>::of(&mut [7]);
        assert_eq!((d.p50, d.p99, d.max, d.mean), (7, 7, 7, 7.0));

        // Three values: ceil(0.5 * 3) = 2nd, ceil(0.9 * 3) = 3rd.
        let d = Distribution::<Count>::of(&mut [30, 10, 20]);
        assert_eq!((d.p50, d.p90), (20, 30));
    }

    #[test]
    fn empty_is_all_zeros() {
        let d = Distribution::<Seconds>::of(&mut []);
        assert_eq!((d.count, d.mean, d.p50, d.max), (0, 0.0, 0, 0));
    }

    #[test]
    fn seconds_serialize_with_the_unit_suffix() {
        let mut values = [NANOS_PER_SEC, 3 * NANOS_PER_SEC];
        let d = Distribution::<Seconds>::of(&mut values);
        let json = serde_json::to_value(d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"count": 2, "mean_s": 2.0, "p50_s": 1.0, "p90_s": 3.0,
                               "p95_s": 3.0, "p99_s": 3.0, "max_s": 3.0})
        );
        assert_eq!(
            d.to_string(),
            "mean 2.000 s, p50 1.000 s, p90 3.000 s, p95 3.000 s, p99 3.000 s, max 3.000 s"
        );
    }

    #[test]
    fn counts_serialize_as_integers() {
        let d = Distribution::<Count>::of(&mut [4, 1, 2, 3]);
        let json = serde_json::to_value(d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"count": 4, "mean": 2.5, "p50": 2, "p90": 4,
                               "p95": 4, "p99": 4, "max": 4})
        );
        assert_eq!(d.to_string(), "mean 2.5, p50 2, p90 4, p95 4, p99 4, max 4");
    }

    #[test]
    fn huge_values_do_not_overflow_the_mean() {
        let d = Distribution::<Count>::of(&mut [u64::MAX, u64::MAX]);
        assert_eq!(d.mean, u64::MAX as f64);
    }
}
