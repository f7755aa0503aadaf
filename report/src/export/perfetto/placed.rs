//! A record placed in the trace's time: its slice (eligible to done, or
//! its last stamp), its nested phases, its name and its args. Owns the
//! rounding of a record's stamps to whole microseconds, clamped so that a
//! phase never leaves its turn.

use serde_json::Value;

use super::super::records::Record;
use super::event::Micros;

/// A record placed in time: its slice and its phases.
pub struct Placed<'r> {
    pub record: &'r Record,
    pub start: Micros,
    pub end: Micros,
}

impl<'r> Placed<'r> {
    /// `None` for a record with no usable time at all.
    pub fn of(record: &'r Record) -> Option<Placed<'r>> {
        let r = record;
        let start = [Some(r.eligible_s), Some(r.dispatched_s), r.sent_s]
            .into_iter()
            .find_map(Record::ns)?;
        let last = [
            r.done_s,
            r.first_content_s,
            r.first_byte_s,
            r.headers_s,
            r.sent_s,
            Some(r.dispatched_s),
        ]
        .into_iter()
        .find_map(Record::ns)
        .unwrap_or(start);
        Some(Placed {
            record,
            start: Micros::round(start),
            end: Micros::round(last.max(start)),
        })
    }

    /// The nested phases, clamped into the slice; empty ones left out.
    pub fn phases(&self) -> Vec<(&'static str, Micros, Micros)> {
        let r = self.record;
        let at =
            |s: Option<f64>| Record::ns(s).map(|ns| Micros::round(ns).clamp(self.start, self.end));
        let dispatched = at(Some(r.dispatched_s));
        let sent = at(r.sent_s);
        let first_content = at(r.first_content_s);
        let mut phases = vec![];
        if let Some(d) = dispatched {
            phases.push(("queue wait", self.start, d));
        }
        if let Some(s) = sent {
            phases.push((
                "waiting for first token",
                s,
                first_content.unwrap_or(self.end),
            ));
        }
        if let Some(f) = first_content {
            phases.push(("streaming", f, self.end));
        }
        phases.retain(|&(_, from, to)| to > from);
        phases
    }
}

/// A turn's slice name: its turn, warmup, and how it failed.
pub fn name(record: &Record) -> String {
    let r = record;
    let turn = if r.warmup {
        format!("warmup turn {}", r.turn)
    } else {
        format!("turn {}", r.turn)
    };
    match (&r.error, r.status.as_str()) {
        (_, "cancelled") => format!("{turn} · cancelled"),
        (Some(e), _) => format!("{turn} · error: {}", e.category),
        (None, "ok") => turn,
        (None, status) => format!("{turn} · {status}"),
    }
}

/// A turn's slice args: the record's fields, absent ones left out.
pub fn args(record: &Record) -> Value {
    Value::Object(
        record
            .fields()
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}
