//! `arbor export --perfetto FILE`: a run as a Chrome trace-event JSON file
//! (the format the Perfetto UI and chrome://tracing open).
//!
//! - Every play of a tree is a process (pid `play + 2`, named by tree, copy
//!   and play); every agent of it a thread (a tid of its own, above every
//!   pid, named by the agent; a process's names are given on its pid's
//!   own tid). A turn whose request overlapped its agent's previous one (a
//!   recorded overlap replayed concurrently) goes to a second thread of the
//!   agent, so slices on one thread always nest.
//! - Every record is a complete slice (`ph: X`) from `eligible` to `done`
//!   (or its last stamp), with the record's fields as args, and its phases
//!   nested inside: `queue wait` (eligible..dispatched), `waiting for first
//!   token` (sent..first_content, or sent..done when no content came) and
//!   `streaming` (first_content..done); a phase of zero length is left out.
//!   Failed and cancelled requests say so in their name and args.
//! - Spawns and joins (`trees.jsonl`) are flows (`ph: s` then `ph: f`):
//!   the start sits half a microsecond before the end of the source turn's
//!   slice (or before the target's, if that begins first), inside it (a
//!   flow start binds to the slice open on its thread);
//!   the end half a microsecond before the target turn's slice begins (a
//!   flow end without `bp: e` binds to the next slice that begins on its
//!   thread). Every flow has an id of its own.
//! - A counter (`ph: C`, process 1 "arbor run") of requests in flight:
//!   sent and not yet done.
//!
//! Times are microseconds from the run's epoch, rounded to whole
//! microseconds (flow points at half microseconds), so a child slice never
//! pokes out of its parent through rounding; events are written sorted by
//! time, a longer slice before a shorter one that starts with it.
//! Owns the mapping from records (and shapes) to events; reads no file.

mod event;
mod placed;
mod window;

pub use window::{Kept, Window, MAX_TURNS};

use std::collections::BTreeMap;
use std::io::{self, Write};

use arbor_runs::shape::{EdgeRole, TreeShape};

use super::records::Record;
use event::{Event, Micros, HALF_US};
use placed::Placed;

/// Process of the run-wide counter; plays are `play + PLAY_PID_BASE`.
const RUN_PID: u64 = 1;
const PLAY_PID_BASE: u64 = 2;

/// What the trace holds, for the command's report.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Written {
    pub turns: usize,
    pub plays: usize,
    pub flows: usize,
}

/// Where a turn's slice was drawn.
#[derive(Clone, Copy)]
struct Drawn {
    pid: u64,
    tid: u64,
    start: Micros,
    end: Micros,
}

/// Writes the trace of `records`; `shapes` (from `trees.jsonl`) give the
/// spawn and join flows, none without them. With a `cut` (the records
/// are a [`Window`]'s), the in-flight counter stops before it, where it
/// is no longer exact.
pub fn write<'r>(
    out: &mut dyn Write,
    records: &'r [Record],
    shapes: Option<&[TreeShape]>,
    cut: Option<Micros>,
) -> io::Result<Written> {
    // Records with no usable time are not drawn ([`Window`] counts them).
    let placed: Vec<Placed<'r>> = records.iter().filter_map(Placed::of).collect();
    let shapes: BTreeMap<u32, &TreeShape> = shapes
        .unwrap_or(&[])
        .iter()
        .map(|s| (s.tree_index, s))
        .collect();
    let mut plays: BTreeMap<u32, Vec<&Placed<'r>>> = BTreeMap::new();
    for p in &placed {
        plays.entry(p.record.play).or_default().push(p);
    }

    // Every event names a thread, and Perfetto takes a tid equal to a pid
    // for that process's main thread: agents' tids start above every pid,
    // so no tid is ever seen under two processes.
    let last_pid = plays.keys().last().map_or(RUN_PID, |&p| play_pid(p));
    let mut trace = Trace::new(last_pid + 1);
    trace.name(RUN_PID, RUN_PID, Named::Process, "arbor run", -1);
    trace.name(RUN_PID, RUN_PID, Named::Thread, "requests in flight", 0);
    for (&play, turns) in &plays {
        let first = turns[0].record;
        let shape = shapes
            .get(&first.tree_index)
            .copied()
            .filter(|s| s.tree == first.tree);
        trace.add_play(play, turns, shape);
    }
    trace.written.plays = plays.len();
    let mut counter = in_flight(&placed);
    if let Some(cut) = cut {
        counter.retain(|&(at, _)| at < cut);
    }
    trace.write_json(out, &counter, cut)
}

fn play_pid(play: u32) -> u64 {
    PLAY_PID_BASE + u64::from(play)
}

/// A process or a thread, for its name and sort index.
#[derive(Clone, Copy)]
enum Named {
    Process,
    Thread,
}

/// A slice waiting to be written, small: its event (name, args) is made
/// as it is written, so that a run's worth of them is never held at once.
struct Slice<'r> {
    start: Micros,
    end: Micros,
    pid: u64,
    tid: u64,
    /// Order of creation (a turn before its phases).
    seq: u64,
    what: SliceOf<'r>,
}

/// What a slice draws.
#[derive(Clone, Copy)]
enum SliceOf<'r> {
    /// A turn: named by its record, every field of it as args.
    Turn(&'r Record),
    /// A phase of a turn, by name: its request as args.
    Phase(&'static str, &'r Record),
}

impl Slice<'_> {
    fn event(&self) -> Event {
        let (name, cat, args) = match self.what {
            SliceOf::Turn(record) => {
                let cat = if record.error.is_some() {
                    "turn,error"
                } else {
                    "turn"
                };
                (placed::name(record), cat, placed::args(record))
            }
            SliceOf::Phase(name, record) => (
                name.to_string(),
                "phase",
                serde_json::json!({ "request": record.request }),
            ),
        };
        let mut e = Event::slice(name, cat, self.start, self.end, self.pid, self.tid);
        e.args = Some(args);
        e
    }
}

/// The events being built.
struct Trace<'r> {
    meta: Vec<Event>,
    slices: Vec<Slice<'r>>,
    flows: Vec<Event>,
    next_tid: u64,
    written: Written,
}

impl<'r> Trace<'r> {
    fn new(first_tid: u64) -> Trace<'r> {
        Trace {
            meta: Vec::new(),
            slices: Vec::new(),
            flows: Vec::new(),
            next_tid: first_tid,
            written: Written::default(),
        }
    }

    fn name(&mut self, pid: u64, tid: u64, what: Named, name: &str, sort_index: i64) {
        let (name_event, sort_event) = match what {
            Named::Process => ("process_name", "process_sort_index"),
            Named::Thread => ("thread_name", "thread_sort_index"),
        };
        self.meta
            .push(Event::metadata(name_event, pid, tid, "name", name.into()));
        self.meta.push(Event::metadata(
            sort_event,
            pid,
            tid,
            "sort_index",
            sort_index.into(),
        ));
    }

    /// A play: its process, its agents' threads and turns, its flows.
    fn add_play(&mut self, play: u32, turns: &[&Placed<'r>], shape: Option<&TreeShape>) {
        let pid = play_pid(play);
        let first = turns[0].record;
        let lane = first
            .lane
            .map(|l| format!(" · lane {l}"))
            .unwrap_or_default();
        let name = format!("{} · copy {} · play {play}{lane}", first.tree, first.copy);
        self.name(pid, pid, Named::Process, &name, i64::from(play));

        let mut agents: BTreeMap<&str, Vec<&Placed<'r>>> = BTreeMap::new();
        for &p in turns {
            agents.entry(p.record.agent.as_str()).or_default().push(p);
        }
        let mut order: Vec<(&str, Vec<&Placed<'r>>)> = agents.into_iter().collect();
        // The tree's order of agents when known, else by first start.
        let index_of =
            |agent: &str| shape.and_then(|s| s.agents.iter().position(|a| a.agent == agent));
        order.sort_by_key(|(agent, ps)| {
            (
                index_of(agent).unwrap_or(usize::MAX),
                ps.iter().map(|p| p.start).min(),
                agent.to_string(),
            )
        });
        let mut drawn: BTreeMap<(&str, u32), Drawn> = BTreeMap::new();
        for (sort_index, (agent, ps)) in order.into_iter().enumerate() {
            self.add_agent(pid, agent, sort_index as i64, ps, &mut drawn);
        }
        if let Some(shape) = shape {
            let flows = flow_events(shape, &drawn, &mut self.written.flows);
            self.flows.extend(flows);
        }
    }

    /// An agent's turns on its thread, and on more threads where they
    /// overlap; notes where each turn was drawn.
    fn add_agent<'a>(
        &mut self,
        pid: u64,
        agent: &'a str,
        sort_index: i64,
        mut turns: Vec<&Placed<'r>>,
        drawn: &mut BTreeMap<(&'a str, u32), Drawn>,
    ) {
        turns.sort_by_key(|p| (p.start, p.end, p.record.request));
        // The agent's threads: (tid, end of its last slice).
        let mut threads: Vec<(u64, Micros)> = Vec::new();
        for p in turns {
            let tid = match threads.iter_mut().find(|(_, end)| *end <= p.start) {
                Some(thread) => {
                    thread.1 = p.end;
                    thread.0
                }
                None => {
                    let tid = self.next_tid;
                    self.next_tid += 1;
                    let name = match threads.len() {
                        0 => agent.to_string(),
                        n => format!("{agent} (overlap {n})"),
                    };
                    self.name(pid, tid, Named::Thread, &name, sort_index);
                    threads.push((tid, p.end));
                    tid
                }
            };
            self.add_turn(p, pid, tid);
            // A measured request wins over a warmup of the same turn.
            let key = (agent, p.record.turn);
            if !p.record.warmup || !drawn.contains_key(&key) {
                let here = Drawn {
                    pid,
                    tid,
                    start: p.start,
                    end: p.end,
                };
                drawn.insert(key, here);
            }
        }
    }

    /// A turn's slice and its phases'.
    fn add_turn(&mut self, p: &Placed<'r>, pid: u64, tid: u64) {
        self.push_slice(p.start, p.end, (pid, tid), SliceOf::Turn(p.record));
        for (name, from, to) in p.phases() {
            self.push_slice(from, to, (pid, tid), SliceOf::Phase(name, p.record));
        }
        self.written.turns += 1;
    }

    fn push_slice(&mut self, start: Micros, end: Micros, at: (u64, u64), what: SliceOf<'r>) {
        let seq = self.slices.len() as u64;
        let (pid, tid) = at;
        self.slices.push(Slice {
            start,
            end,
            pid,
            tid,
            seq,
            what,
        });
    }

    /// The whole file: names, slices in time order (a longer slice before
    /// a shorter one that starts with it), flows, the counter.
    fn write_json(
        mut self,
        out: &mut dyn Write,
        counter: &[(Micros, i64)],
        cut: Option<Micros>,
    ) -> io::Result<Written> {
        self.slices
            // `seq` is unique: no two keys are equal, and the unstable
            // sort needs no buffer.
            .sort_unstable_by_key(|s| {
                (
                    s.start,
                    std::cmp::Reverse(s.end.0.saturating_sub(s.start.0)),
                    s.seq,
                )
            });
        out.write_all(b"{\"traceEvents\":[\n")?;
        let mut first = true;
        let mut put = |out: &mut dyn Write, event: &Event| -> io::Result<()> {
            if !first {
                out.write_all(b",\n")?;
            }
            first = false;
            serde_json::to_writer(&mut *out, event).map_err(io::Error::other)
        };
        for event in &self.meta {
            put(out, event)?;
        }
        for slice in &self.slices {
            put(out, &slice.event())?;
        }
        for event in &self.flows {
            put(out, event)?;
        }
        for &(at, level) in counter {
            put(out, &counter_event(at, level))?;
        }
        out.write_all(b"\n],\"otherData\":")?;
        let mut other = serde_json::json!({
            "generator": "arbor export",
            "arbor_version": env!("CARGO_PKG_VERSION"),
            "time": "microseconds from the run's epoch",
        });
        if let Some(cut) = cut {
            other["window"] = serde_json::json!(format!(
                "the run's first {} s: every turn eligible before then; \
                 later turns are left out (a trace holds at most {MAX_TURNS} turns)",
                cut.0 as f64 / 1e9
            ));
        }
        serde_json::to_writer(&mut *out, &other).map_err(io::Error::other)?;
        out.write_all(b"}\n")?;
        Ok(self.written)
    }
}

/// The flow events of one play's spawn and join edges whose both turns
/// were drawn.
fn flow_events(
    shape: &TreeShape,
    drawn: &BTreeMap<(&str, u32), Drawn>,
    next_id: &mut usize,
) -> Vec<Event> {
    let mut events = Vec::new();
    let turn = |agent: u32, turn: u32| {
        let id = shape.agents.get(agent as usize)?.agent.as_str();
        drawn.get(&(id, turn)).copied()
    };
    for edge in &shape.edges {
        let name = match edge.role {
            EdgeRole::Spawn => "spawn",
            EdgeRole::Join => "join",
            EdgeRole::Other => continue,
        };
        let (Some(from), Some(to)) = (
            turn(edge.from_agent, edge.from_turn),
            turn(edge.to_agent, edge.to_turn),
        ) else {
            continue;
        };
        *next_id += 1;
        let id = *next_id as u64;
        // Just before the target slice begins: bound to it.
        let in_at = to.start.0.saturating_sub(HALF_US);
        // Inside the source slice, late in it, and no later than the end
        // (a start-anchored edge's target can begin before its source
        // ends; the importer must meet the start before the end binds).
        let out_at = from
            .end
            .0
            .saturating_sub(HALF_US)
            .min(in_at)
            .max(from.start.0);
        for (ph, at, place) in [("s", out_at, from), ("f", in_at, to)] {
            let mut e = Event::at(name.to_string(), ph, Some(Micros(at)), place.pid, place.tid);
            e.cat = Some("flow");
            e.id = Some(id);
            events.push(e);
        }
    }
    events
}

/// The counter of requests in flight: up at `sent`, down at the end of
/// the request's slice; ends before starts at one time. Its levels, each
/// with the time it starts, from 0 at 0 (the events are made as they are
/// written).
fn in_flight(placed: &[Placed]) -> Vec<(Micros, i64)> {
    let mut changes: Vec<(Micros, i64)> = Vec::new();
    for p in placed {
        if let Some(sent) = Record::ns(p.record.sent_s) {
            let sent = Micros::round(sent).clamp(p.start, p.end);
            changes.push((sent, 1));
            changes.push((p.end, -1));
        }
    }
    changes.sort();
    let mut levels = vec![(Micros(0), 0)];
    let mut level = 0i64;
    let mut i = 0;
    while i < changes.len() {
        let at = changes[i].0;
        while i < changes.len() && changes[i].0 == at {
            level += changes[i].1;
            i += 1;
        }
        levels.push((at, level));
    }
    levels
}

fn counter_event(at: Micros, level: i64) -> Event {
    let mut e = Event::at("in flight".to_string(), "C", Some(at), RUN_PID, RUN_PID);
    e.args = Some(serde_json::json!({ "requests": level }));
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn record(request: u64, agent: &str, turn: u32, times: [f64; 4]) -> Record {
        let [eligible, sent, first_content, done] = times;
        Record {
            request,
            tree: "t".into(),
            agent: agent.into(),
            turn,
            status: "ok".into(),
            eligible_s: eligible,
            dispatched_s: eligible,
            sent_s: Some(sent),
            first_content_s: Some(first_content),
            done_s: Some(done),
            ..Record::default()
        }
    }

    #[test]
    fn overlapping_turns_of_one_agent_get_two_threads() {
        let records = [
            record(0, "a", 0, [0.0, 0.001, 0.002, 0.010]),
            record(1, "a", 1, [0.005, 0.005, 0.006, 0.008]),
            record(2, "a", 2, [0.010, 0.011, 0.012, 0.013]),
        ];
        let mut out = Vec::new();
        let written = write(&mut out, &records, None, None).unwrap();
        assert_eq!(written.turns, 3);
        let trace: Value = serde_json::from_slice(&out).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let tid_of = |name: &str| {
            events
                .iter()
                .find(|e| e["ph"] == "X" && e["name"] == name)
                .map(|e| e["tid"].as_u64().unwrap())
                .unwrap()
        };
        assert_ne!(
            tid_of("turn 0"),
            tid_of("turn 1"),
            "overlap: another thread"
        );
        assert_eq!(
            tid_of("turn 0"),
            tid_of("turn 2"),
            "after the end: the first thread"
        );
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"a (overlap 1)"), "{names:?}");
    }

    #[test]
    fn a_windowed_trace_stops_its_counter_at_the_cut_and_says_so() {
        // Ten one-second turns of ten agents, one starting every second;
        // a window of 4 keeps the first four (cut at 4 s).
        let mut window = Window::new(4);
        for k in 0..10u32 {
            let t = f64::from(k);
            window.add(record(
                u64::from(k),
                &format!("a{k}"),
                0,
                [t, t, t + 0.5, t + 3.0],
            ));
        }
        let kept = window.finish();
        assert_eq!(kept.cut, Some(Micros(4_000_000_000)));
        assert_eq!((kept.records.len(), kept.left_out), (4, 6));
        let mut out = Vec::new();
        let written = write(&mut out, &kept.records, None, kept.cut).unwrap();
        assert_eq!(written.turns, 4);
        let trace: Value = serde_json::from_slice(&out).unwrap();
        let counter: Vec<u64> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C")
            .map(|e| e["ts"].as_u64().unwrap())
            .collect();
        // Uncut, the kept turns' ends (3 s to 6 s) would count down past
        // 4 s as if nothing else were in flight.
        assert!(counter.iter().all(|&ts| ts < 4_000_000), "{counter:?}");
        assert!(counter.contains(&3_000_000), "{counter:?}");
        assert!(trace["otherData"]["window"]
            .as_str()
            .unwrap()
            .starts_with("the run's first 4 s"));
    }

    #[test]
    fn errors_show_in_the_name_and_zero_phases_are_left_out() {
        let mut r = record(0, "a", 4, [0.0, 0.0, 0.0, 0.0]);
        r.first_content_s = None;
        r.done_s = Some(0.003);
        r.status = "error".into();
        r.error = Some(super::super::records::RecordError {
            category: "timeout".into(),
            message: "slow".into(),
            http_status: None,
            retry_after_s: None,
        });
        let p = Placed::of(&r).unwrap();
        assert_eq!(placed::name(&r), "turn 4 · error: timeout");
        let phases = p.phases();
        assert_eq!(phases.len(), 1, "no queue wait, no streaming");
        assert_eq!(phases[0].0, "waiting for first token");
        assert_eq!(placed::args(&r)["error_category"], "timeout");
    }

    #[test]
    fn a_flow_starts_inside_its_source_and_before_its_target_begins() {
        use arbor_runs::shape::{AgentShape, EdgeShape};
        let agent = |id: &str, parent| AgentShape {
            agent: id.into(),
            parent,
            kind: "blocking".into(),
            turns: 1,
        };
        let shape = TreeShape {
            tree_index: 0,
            tree: "t".into(),
            agents: vec![agent("r", None), agent("c", Some(0))],
            edges: vec![EdgeShape {
                role: EdgeRole::Spawn,
                from_agent: 0,
                from_turn: 0,
                to_agent: 1,
                to_turn: 0,
                anchor: "start".into(),
                gap_s: 0.0,
            }],
        };
        let at = |pid, tid, start: u64, end: u64| Drawn {
            pid,
            tid,
            start: Micros(start * 1000),
            end: Micros(end * 1000),
        };
        let ts = |drawn: &BTreeMap<(&str, u32), Drawn>| {
            let mut n = 0;
            let events = flow_events(&shape, drawn, &mut n);
            assert_eq!(n, 1);
            let of = |ph: &str| {
                events
                    .iter()
                    .find(|e| e.ph == ph)
                    .and_then(|e| e.ts)
                    .unwrap()
                    .0
            };
            (of("s"), of("f"))
        };
        // The child begins after its parent ended: the start late in the
        // parent, the end just before the child.
        let after = BTreeMap::from([(("r", 0), at(2, 3, 0, 10)), (("c", 0), at(2, 4, 12, 20))]);
        assert_eq!(ts(&after), (9_500, 11_500));
        // A start-anchored child begins while its parent runs: the start
        // still comes first, inside the parent.
        let during = BTreeMap::from([(("r", 0), at(2, 3, 0, 10)), (("c", 0), at(2, 4, 3, 20))]);
        assert_eq!(ts(&during), (2_500, 2_500));
    }
}
