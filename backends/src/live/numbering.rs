//! Request and play numbers shared by the live loops of one process
//! (`arbor run --threads N`: one loop a thread, each over its own stripe
//! of the plan, each with its own scheduler).
//!
//! A scheduler numbers its requests by slot (a play's turns are a block of
//! consecutive ids, given when the play starts) and its plays by its own
//! list, so two loops' numbers overlap. With a shared [`Numbering`] each
//! loop gives a play, the first time it dispatches one of its turns, the
//! next play number and the next block of request ids of the whole
//! process (one atomic add each, per play, never per event); a request
//! keeps its offset in its play's block. The numbers of a run are then
//! blocks of whole plays from 0, as one loop's are: the same set when the
//! same plays ran, in the order the process started them.
//!
//! Owns the shared counters and a loop's map from its own numbers to the
//! process's (from the scheduler's first play on: the plays it forgot are
//! done and recorded, their numbers dropped with them); reads the
//! scheduler, never changes it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use arbor_engine::scheduler::{RequestId, Scheduler};
use arbor_engine::window::IdWindow;

/// The process's next request id and next play number.
#[derive(Debug, Default)]
pub struct Numbering {
    requests: AtomicU64,
    plays: AtomicU32,
}

/// One loop's numbers in the process's: per play of its scheduler, the
/// play's number and the first request id of its block.
#[derive(Debug)]
pub(super) struct Numbers {
    shared: Arc<Numbering>,
    /// By the scheduler's play id.
    plays: IdWindow<Option<(u32, RequestId)>>,
}

/// A request's numbers in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Number {
    pub request: RequestId,
    pub play: u32,
}

impl Numbers {
    pub(super) fn new(shared: Arc<Numbering>) -> Numbers {
        let mut plays = IdWindow::default();
        plays.drop_finished(Scheduler::FORGET_BATCH);
        Numbers { shared, plays }
    }

    /// Request `id`'s numbers in the process (its play's block is taken
    /// the first time one of the play's requests is asked for); `None` for
    /// a request the scheduler does not know.
    pub(super) fn of(&mut self, scheduler: &Scheduler, id: RequestId) -> Option<Number> {
        let local_play = scheduler.slot(id)?.play;
        let play = scheduler.play(local_play)?;
        let base = play.request(0)?;
        self.plays.forget_below(scheduler.first_play());
        let entry = self.plays.entry(local_play)?;
        let (number, first) = match *entry {
            Some(taken) => taken,
            None => {
                let turns = scheduler.trees().get(play.tree as usize)?.turn_count();
                let taken = (
                    self.shared.plays.fetch_add(1, Ordering::Relaxed),
                    self.shared
                        .requests
                        .fetch_add(u64::from(turns), Ordering::Relaxed),
                );
                *entry = Some(taken);
                taken
            }
        };
        Some(Number {
            request: first + (id - base),
            play: number,
        })
    }
}
