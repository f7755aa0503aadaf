//! The trace-event file's vocabulary: [`Micros`] (a time, written in
//! microseconds) and [`Event`] (one JSON object of `traceEvents`, with the
//! fields the format documents for its phase). Knows nothing of records.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// Half a microsecond, in nanoseconds: where flow points sit, and the
/// rounding of every other time.
pub const HALF_US: u64 = 500;

/// A time in the trace: nanoseconds from the epoch, written in
/// microseconds (a whole number when it is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Micros(pub u64);

impl Micros {
    /// The nearest whole microsecond.
    pub fn round(ns: u64) -> Micros {
        Micros(ns.saturating_add(HALF_US) / 1000 * 1000)
    }
}

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 % 1000 {
            0 => s.serialize_u64(self.0 / 1000),
            _ => s.serialize_f64(self.0 as f64 / 1000.0),
        }
    }
}

/// One trace event.
#[derive(Debug, Serialize)]
pub struct Event {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cat: Option<&'static str>,
    pub ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<Micros>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<Micros>,
    pub pid: u64,
    pub tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
}

impl Event {
    pub fn at(name: String, ph: &'static str, ts: Option<Micros>, pid: u64, tid: u64) -> Event {
        Event {
            name,
            cat: None,
            ph,
            ts,
            dur: None,
            pid,
            tid,
            id: None,
            args: None,
        }
    }

    pub fn metadata(name: &str, pid: u64, tid: u64, key: &str, value: Value) -> Event {
        let mut e = Event::at(name.to_string(), "M", None, pid, tid);
        e.args = Some(Value::Object(Map::from_iter([(key.to_string(), value)])));
        e
    }

    pub fn slice(
        name: String,
        cat: &'static str,
        from: Micros,
        to: Micros,
        pid: u64,
        tid: u64,
    ) -> Event {
        let mut e = Event::at(name, "X", Some(from), pid, tid);
        e.cat = Some(cat);
        e.dur = Some(Micros(to.0.saturating_sub(from.0)));
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_and_print() {
        assert_eq!(Micros::round(1_499), Micros(1_000));
        assert_eq!(Micros::round(1_500), Micros(2_000));
        assert_eq!(serde_json::to_string(&Micros(2_000)).unwrap(), "2");
        assert_eq!(serde_json::to_string(&Micros(2_500)).unwrap(), "2.5");
    }
}
