//! The scheduler's vocabulary, shared by the core and every sub-state:
//! requests and commands, outcomes, a turn's state, the per-turn [`Slot`],
//! the [`Play`] of a tree, the closed-loop [`Lane`], the [`Stats`] counters
//! and the internal timer kinds.
//!
//! Owns the types and their trivial constructors; no scheduling logic.
//! Fields the sub-states share are `pub(super)`: visible inside the
//! scheduler only.

use crate::time::Nanos;

/// "No turn" in a `u32` turn field.
pub(super) const NO_TURN: u32 = u32::MAX;

/// Identifies one request (one turn of one play) for the whole run.
pub type RequestId = u64;

/// What the driver must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Send this request now, then report `handle_sent`.
    Dispatch(RequestId),
    /// Abort this in-flight request, then report its completion as
    /// [`Outcome::Cancelled`].
    Cancel(RequestId),
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The request failed (error status, cut stream, ...). Successors still
    /// proceed.
    Failed,
    Cancelled,
    /// The request failed in a way that ends its agent's trajectory (the
    /// prompt no longer fits the context): the agent's remaining turns and
    /// the subagents they would spawn are skipped; a parent waiting on it
    /// goes on.
    EndTrajectory,
}

impl Outcome {
    /// A failure of either kind.
    pub(super) fn is_failure(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::EndTrajectory)
    }
}

/// Where a turn is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Waiting for incoming edges.
    Blocked,
    /// All edges resolved, waiting for its gap to elapse.
    Timer,
    /// Eligible, waiting for the request cap.
    Queued,
    Dispatched,
    Sent,
    Done,
    Failed,
    Cancelled,
    /// Never sent: the duration ended first, or its trajectory ended
    /// (context overflow).
    Skipped,
    /// Recorded before the play's `t*`: part of the conversation's past,
    /// not replayed (the AgentX start window).
    History,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Blocked => "blocked",
            TurnState::Timer => "timer",
            TurnState::Queued => "queued",
            TurnState::Dispatched => "dispatched",
            TurnState::Sent => "sent",
            TurnState::Done => "ok",
            TurnState::Failed => "failed",
            TurnState::Cancelled => "cancelled",
            TurnState::Skipped => "skipped",
            TurnState::History => "history",
        }
    }

    pub(super) fn is_pending(self) -> bool {
        matches!(
            self,
            TurnState::Blocked | TurnState::Timer | TurnState::Queued
        )
    }

    pub(super) fn is_in_flight(self) -> bool {
        matches!(self, TurnState::Dispatched | TurnState::Sent)
    }

    /// The state a request ends in.
    pub(super) fn ended(outcome: Outcome) -> TurnState {
        match outcome {
            Outcome::Ok => TurnState::Done,
            Outcome::Failed | Outcome::EndTrajectory => TurnState::Failed,
            Outcome::Cancelled => TurnState::Cancelled,
        }
    }
}

/// The life of one turn of one play. Times are from the run's epoch;
/// `shift_*` record the cumulative idle shift at that moment, so the shift
/// credited to a turn between two events is their difference.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub play: u32,
    pub turn: u32,
    pub state: TurnState,
    /// Incoming edges not yet resolved.
    pub(super) pending_in: u32,
    /// Latest constraint so far, in the shifted time base.
    pub(super) due_key: Nanos,
    pub eligible: Nanos,
    pub dispatched: Nanos,
    /// Time spent waiting for the request cap (`--max-inflight`): from
    /// when the turn joined the FIFO to its dispatch. 0 when it was
    /// dispatched as soon as it was handled (a live driver's timer lag is
    /// not queue wait: it shows in `sent - eligible`).
    pub queue_wait: Nanos,
    pub sent: Nanos,
    pub end: Nanos,
    pub shift_at_eligible: Nanos,
    pub shift_at_sent: Nanos,
    pub shift_at_end: Nanos,
    /// Sent as a warmup (one output token, full prefix), not measured.
    pub warmup: bool,
    /// A warmup of the accelerated cache warmup: sent with no gap once its
    /// edges resolve (not before every lane reached `t*`), one output
    /// token, and its own edges released like a measured turn's.
    pub accelerated: bool,
}

impl Slot {
    /// Turn `turn` of `play`, blocked on `pending_in` edges.
    pub(super) fn blocked(play: u32, turn: u32, pending_in: u32) -> Slot {
        Slot {
            play,
            turn,
            state: TurnState::Blocked,
            pending_in,
            due_key: 0,
            eligible: 0,
            dispatched: 0,
            queue_wait: 0,
            sent: 0,
            end: 0,
            shift_at_eligible: 0,
            shift_at_sent: 0,
            shift_at_end: 0,
            warmup: false,
            accelerated: false,
        }
    }
}

/// One scheduled instance of a tree.
#[derive(Debug, Clone, Copy)]
pub struct Play {
    pub tree: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    /// Planned arrival (before any idle shift).
    pub planned: Nanos,
    pub started: Option<Nanos>,
    pub done: Option<Nanos>,
    /// In a closed loop: this is the lane's `k`-th play (from 0). Markers
    /// and `t*` derive from it, never from timing.
    pub lane_play: u32,
    /// Where the play entered its tree (the start window), if not at 0.
    pub t_star: Option<Nanos>,
    /// Request id of its turn 0, once started.
    pub(super) slot_base: u32,
    /// Turns not yet finished (done, failed, cancelled, skipped, history).
    pub(super) remaining: u32,
    /// Requests of this play dispatched and not yet completed.
    pub(super) inflight: u32,
}

impl Play {
    /// A play not started yet.
    pub(crate) fn planned(tree: u32, copy: u32, lane: Option<u32>, planned: Nanos) -> Play {
        Play {
            tree,
            copy,
            lane,
            planned,
            started: None,
            done: None,
            lane_play: 0,
            t_star: None,
            slot_base: 0,
            remaining: 0,
            inflight: 0,
        }
    }

    /// Request id of this play's turn `turn`, once started.
    pub fn request(&self, turn: u32) -> Option<RequestId> {
        self.started.map(|_| (self.slot_base + turn) as RequestId)
    }
}

/// A closed-loop lane.
#[derive(Debug, Clone, Default)]
pub struct Lane {
    /// The (tree, copy) pairs this lane plays, in order.
    pub share: Vec<(u32, u32)>,
    /// Index in `share` of the next play.
    pub(super) next: usize,
    /// Plays started by this lane.
    pub plays: u32,
    /// When the lane finished its share (without `--loop`), or stopped
    /// making progress.
    pub dry_at: Option<Nanos>,
    /// With `--loop`: when the lane last wrapped around its share.
    pub(super) last_wrap: Option<Nanos>,
    /// With a start window: where the lane enters its first tree.
    pub t_star: Option<Nanos>,
    /// Warmup requests of the lane's first play, as planned: one per
    /// agent alive at `t*`, plus the accelerated cache warmup's count
    /// form (the duration form's number is known only once it ran).
    pub warmups: u32,
    /// With `--loop`: the lane went a whole cycle of its share without time
    /// advancing (every turn took no time) and was stopped, since it would
    /// otherwise replay forever at one instant.
    pub stalled: bool,
}

/// What a plan holds before it runs, counted from the workload's sizes
/// and the policy before anything is allocated ([`super::Scheduler::footprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Plays: every tree times `copies`.
    pub plays: u64,
    /// Requests: every turn times `copies`.
    pub turns: u64,
    /// Closed-loop lanes that hold a share (a lane with none is not made).
    pub lanes: u64,
    /// Bytes of the scheduler's own arrays for them: a [`Slot`] a turn; a
    /// [`Play`], its arrival and its timer a play; a [`Lane`] a lane and
    /// the dealt `(tree, copy)` of each play in the closed loop.
    pub bytes: u64,
}

impl Footprint {
    /// The most plays or requests one plan can number (ids are `u32`).
    pub const MAX_COUNT: u64 = u32::MAX as u64;

    /// Whether the counts fit the scheduler's `u32` ids.
    pub fn fits_ids(&self) -> bool {
        self.plays <= Self::MAX_COUNT && self.turns <= Self::MAX_COUNT
    }
}

/// What a pending timer means.
#[derive(Debug, Clone, Copy)]
pub(super) enum Timer {
    /// A turn's gap elapsed.
    Turn(u32),
    /// An open-loop play arrives.
    Play(u32),
    /// A closed-loop lane starts its first play.
    Lane(u32),
    /// Every lane reaches its `t*`: measurement (and the duration) starts.
    /// A timer like the others, so idle shifts move it with the turns.
    /// With the accelerated cache warmup: the boundary instant, after
    /// which accelerated turns go and once every warmup returned,
    /// profiling starts.
    Profiling,
    /// `--cache-warmup-duration` is up: no accelerated turn is released
    /// after it.
    CacheWarmupEnd,
}

/// Counters a plan or run reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub peak_inflight: u32,
    pub peak_inflight_at: Nanos,
    pub peak_live_trees: u32,
    pub peak_live_trees_at: Nanos,
    pub idle_shifts: u64,
    pub idle_skipped: Nanos,
    /// Events handled: timer firings, dispatches, sends, completions.
    pub events: u64,
    pub dispatched: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub skipped: u64,
    pub plays_started: u64,
    /// Turns recorded before a play's `t*` (not replayed).
    pub history: u64,
    /// Warmup requests dispatched.
    pub warmups: u64,
    /// Per-tree idle watchdog shifts and the time they skipped.
    pub tree_idle_shifts: u64,
    pub tree_idle_skipped: Nanos,
    pub plays_done: u64,
    /// Plays whose arrival never came before the duration ended.
    pub plays_not_started: u64,
    /// Latest completion seen.
    pub last_completion: Nanos,
    pub stopped_at: Option<Nanos>,
}

impl Stats {
    /// A request ended at `at` with `outcome`.
    pub(super) fn count_end(&mut self, outcome: Outcome, at: Nanos) {
        match outcome {
            Outcome::Ok => self.completed += 1,
            Outcome::Failed | Outcome::EndTrajectory => self.failed += 1,
            Outcome::Cancelled => self.cancelled += 1,
        }
        self.last_completion = self.last_completion.max(at);
    }
}
