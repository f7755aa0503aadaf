//! One request of a live run as the calibration sees it ([`Observed`]):
//! its stamps in integer nanoseconds, its tokens, and the request of its
//! thread it was sent after ([`After`]).
//!
//! Owns the calibration's view of a record. `runs` fills it from a run's
//! records and `follows` links each to the one it was sent after; it uses
//! no other module here, so both (and every later stage) can use it.

use arbor_engine::time::Nanos;

/// One request of a live run, as the client measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The conversation it continues: turns of one agent of one play
    /// share it, and the prompt of a later turn extends an earlier one's
    /// (the replay's prefix keys are built from it).
    pub chain: u64,
    /// A warmup (served, so part of the load; never measured).
    pub warmup: bool,
    pub sent: Nanos,
    /// The first content chunk.
    pub first: Nanos,
    pub done: Nanos,
    /// Every content chunk's arrival, when the run recorded one chunk per
    /// output token; empty otherwise (the timeline then places the tokens
    /// between `first` and `done`).
    pub content: Vec<Nanos>,
    pub isl: u32,
    pub osl: u32,
    /// Prompt tokens the server said it found in its prefix cache.
    pub cached: Option<u32>,
    /// What its send waited on: the lane of a closed loop, else the play
    /// (`follows` links each request to the one it was sent after).
    pub thread: u64,
    /// The request of the same thread it was sent after, and how long
    /// after that one's end (`follows::link`); `None`: sent on its own.
    pub after: Option<After>,
}

/// A request's predecessor in its thread: its index in the run's
/// requests, and the recorded wait from its end to the send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    pub request: usize,
    pub wait: Nanos,
}

impl Observed {
    pub fn ttft(&self) -> Nanos {
        self.first - self.sent
    }

    /// A request of one conversation with no stamped chunks and nothing
    /// cached (the modules' tests).
    #[cfg(test)]
    pub fn stamped(sent: Nanos, first: Nanos, done: Nanos, isl: u32, osl: u32) -> Observed {
        Observed {
            chain: 0,
            warmup: false,
            sent,
            first,
            done,
            content: Vec::new(),
            isl,
            osl,
            cached: None,
            thread: 0,
            after: None,
        }
    }
}
