//! Errors the engine reports: bad input (named by file, place and what was
//! expected), bad policy settings, and misuse of the scheduler API.
//!
//! Owns the error types only; every module builds its own messages.

/// Bad input: a file that cannot be read or does not say what its format
/// requires. `place` is a line (`line 12`), a JSON path (`$.requests[3].t`)
/// or both (`line 12, $.turns[0]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}{message}", place_prefix(.place))]
pub struct InputError {
    pub file: String,
    pub place: Option<String>,
    pub message: String,
}

/// `place: ` when there is a place, nothing otherwise.
fn place_prefix(place: &Option<String>) -> String {
    place
        .as_ref()
        .map_or_else(String::new, |p| format!("{p}: "))
}

impl InputError {
    pub fn new(file: impl Into<String>, place: Option<String>, message: impl Into<String>) -> Self {
        InputError {
            file: file.into(),
            place,
            message: message.into(),
        }
    }

    /// An error about the file as a whole (missing, unreadable, empty).
    pub fn whole(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(file, None, message)
    }

    pub fn at(
        file: impl Into<String>,
        place: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(file, Some(place.into()), message)
    }
}

/// A policy setting that cannot be used. The engine says what is wrong
/// with a value or a combination; it never names a command-line flag (the
/// CLI does, see `cli/src/args`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A value that does not parse or is out of range, e.g. `pct:abc` as a
    /// gap transform: what was expected and what was given.
    #[error("{0}")]
    Value(String),
    /// Settings that do not go together.
    #[error(transparent)]
    Conflict(#[from] PolicyConflict),
}

impl PolicyError {
    /// A bad value, described by `message`.
    pub fn new(message: impl Into<String>) -> Self {
        PolicyError::Value(message.into())
    }
}

/// Policy settings that do not go together (checked by
/// `Policy::validate`), in the engine's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PolicyConflict {
    #[error("copies: expected at least 1")]
    NoCopies,
    #[error("max in flight: expected at least 1")]
    NoInflight,
    #[error("sessions: expected at least 1")]
    NoSessions,
    #[error("looping lanes needs sessions (lanes to loop)")]
    LoopWithoutSessions,
    #[error("stagger applies to open-loop runs; with sessions, lanes start by their arrival")]
    StaggerWithSessions,
    #[error("a start window needs sessions (it places each lane's first tree)")]
    StartWindowWithoutSessions,
    #[error("looping lanes needs a duration, or the run never ends")]
    LoopWithoutDuration,
    #[error("the accelerated cache warmup is bounded by a count or by a duration, not both")]
    CacheWarmupCountAndDuration,
    #[error(
        "the accelerated cache warmup needs a start window (it continues each lane from its t*)"
    )]
    CacheWarmupWithoutStartWindow,
    #[error("the global idle-gap cap cannot be split across shards (it depends on every shard being idle at once); drop it or do not shard")]
    IdleCapWithShard,
    #[error("a start window cannot be split across shards (all lanes start profiling at one instant); drop it or do not shard")]
    StartWindowWithShard,
}

/// Misuse of the scheduler's API by a driver. The engine stays consistent
/// after returning one of these: the offending call had no effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("request {0} does not exist")]
    UnknownRequest(u64),
    #[error("request {0} was not dispatched, so it cannot be sent or completed")]
    NotDispatched(u64),
    #[error("request {0} was already reported sent")]
    AlreadySent(u64),
    #[error("request {0} was already completed")]
    AlreadyCompleted(u64),
    #[error("time went backwards: now {now} ns is before the last event at {last} ns")]
    TimeWentBackwards { now: u64, last: u64 },
}
