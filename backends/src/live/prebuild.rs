//! Request bodies built ahead of time.
//!
//! Owns the store of bodies built for turns that are not yet eligible. A
//! body is a pure function of the turn (its prompt, output length and its
//! play's cache-bust marker), so it can be built while the turn's
//! predecessor streams instead of between the turn becoming eligible and
//! its request going out, where building a 50k-token prompt costs about a
//! millisecond of schedule lag per turn and the lag adds up along a chain.
//!
//! A body is claimed when its build starts; the dispatch takes it if it is
//! ready and otherwise builds its own (a build still running then finds its
//! claim withdrawn and drops its result). Bodies of turns that are never
//! dispatched (cut by the duration, ended trajectories) stay until the run
//! ends; the total held is capped at [`MAX_BYTES`].
//!
//! [`Bodies`] is where the live loop gets a dispatched request's body: from
//! the store when it is ready, else built on the spot; and it starts the
//! builds ahead (a task per dispatched turn with large successors). Under
//! `--history live` a turn after its agent's first is never built ahead:
//! its body waits for the previous turn's answer (`super::history`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use arbor_engine::prompt::CacheBust;
use arbor_engine::scheduler::{RequestId, Scheduler, TurnState};
use arbor_engine::Workload;

use super::request::BodyConfig;
use super::turn::TurnBody;

/// The most body bytes held at once; beyond it nothing more is built ahead.
pub const MAX_BYTES: usize = 128 << 20;

/// Prompts shorter than this (planned input tokens) are built at dispatch:
/// about 1 µs per 100 tokens, less than building ahead costs.
pub const MIN_TOKENS: u32 = 1024;

#[derive(Debug)]
enum Entry {
    /// A build has claimed the turn.
    Building,
    Ready(Vec<u8>),
}

/// Bodies built ahead, by request id.
#[derive(Debug, Default)]
pub struct Prebuilt {
    entries: BTreeMap<RequestId, Entry>,
    bytes: usize,
    /// Bodies dispatched from the store (for the run's report and tests).
    pub used: u64,
}

impl Prebuilt {
    /// Claims `id` for a build ahead: false when it is already claimed or
    /// built, or the store is full.
    pub fn claim(&mut self, id: RequestId) -> bool {
        if self.bytes >= MAX_BYTES || self.entries.contains_key(&id) {
            return false;
        }
        self.entries.insert(id, Entry::Building);
        true
    }

    /// A claimed build finished: keeps the body unless the claim was
    /// withdrawn by the dispatch meanwhile.
    pub fn finish(&mut self, id: RequestId, body: Vec<u8>) {
        if let Some(entry) = self.entries.get_mut(&id) {
            if matches!(entry, Entry::Building) {
                self.bytes += body.len();
                *entry = Entry::Ready(body);
            }
        }
    }

    /// The body of `id` if it is ready; withdraws any claim either way.
    pub fn take(&mut self, id: RequestId) -> Option<Vec<u8>> {
        match self.entries.remove(&id)? {
            Entry::Ready(body) => {
                self.bytes -= body.len();
                self.used += 1;
                Some(body)
            }
            Entry::Building => None,
        }
    }

    /// Bytes held in ready bodies.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Request bodies for the live loop: built ahead when they can be, else at
/// dispatch. Cheap to share with the tasks that build ahead.
#[derive(Debug)]
pub struct Bodies {
    store: Arc<Mutex<Prebuilt>>,
    workload: Arc<Workload>,
    config: Arc<BodyConfig>,
    /// Where the markers come from when prompts carry their play's
    /// cache-bust marker.
    bust: Option<CacheBust>,
    /// `--history live`: a turn after its agent's first is built at
    /// dispatch, from the answer its previous turn got (never ahead, from
    /// the recorded one).
    live_history: bool,
}

impl Bodies {
    pub fn new(workload: Arc<Workload>, config: BodyConfig, bust: Option<CacheBust>) -> Bodies {
        Bodies {
            store: Arc::new(Mutex::new(Prebuilt::default())),
            workload,
            config: Arc::new(config),
            bust,
            live_history: false,
        }
    }

    /// Under `--history live`: later turns of an agent are not built
    /// ahead.
    pub fn with_live_history(mut self, live: bool) -> Bodies {
        self.live_history = live;
        self
    }

    /// The workload the bodies are built from.
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// What every body carries besides its prompt.
    pub fn config(&self) -> &BodyConfig {
        &self.config
    }

    /// The recipe of request `id`'s body.
    pub fn turn(&self, scheduler: &Scheduler, id: RequestId) -> Option<TurnBody> {
        TurnBody::of(scheduler, id, self.bust)
    }

    /// The body of dispatched request `id`: the one built ahead if it is
    /// ready (never for a warmup: its body asks for one token), else built
    /// now.
    pub fn take(&self, id: RequestId, turn: &TurnBody) -> Vec<u8> {
        let ready = if turn.warmup {
            None
        } else {
            lock(&self.store).take(id)
        };
        ready.unwrap_or_else(|| turn.body(&self.workload, &self.config))
    }

    /// Bodies dispatched from the store so far.
    pub fn used(&self) -> u64 {
        lock(&self.store).used
    }

    /// Builds, in a task of its own, the bodies of the turns that request
    /// `id` leads to and that are still waiting: they will be ready when
    /// those turns become eligible. The build starts when the returned
    /// sender fires (request `id`'s response head is in) or is dropped:
    /// not while the server is taking the request in, whose wake-up a busy
    /// client core would delay (on a machine shared with the server).
    pub fn build_ahead(&self, scheduler: &Scheduler, id: RequestId) -> Option<oneshot::Sender<()>> {
        let (tree, play, turn) = scheduler.request_tree(id)?;
        let mut ahead = Vec::new();
        for edge in tree.out(turn) {
            let Some(next) = play.request(edge.to) else {
                continue;
            };
            let waiting = scheduler.slot(next).is_some_and(|s| {
                matches!(s.state, TurnState::Blocked | TurnState::Timer) && !s.warmup
            });
            // A short prompt is built in microseconds: not worth a task.
            let large = tree.isl[edge.to as usize] >= MIN_TOKENS;
            // Its history is not in yet.
            let live = self.live_history && tree.index_in_agent[edge.to as usize] > 0;
            if !waiting || !large || live || !lock(&self.store).claim(next) {
                continue;
            }
            if let Some(body) = self.turn(scheduler, next) {
                ahead.push((next, body));
            }
        }
        if ahead.is_empty() {
            return None;
        }
        let store = Arc::clone(&self.store);
        let workload = Arc::clone(&self.workload);
        let config = Arc::clone(&self.config);
        let (start, started) = oneshot::channel();
        tokio::spawn(async move {
            let _ = started.await;
            for (next, turn) in ahead {
                let body = turn.body(&workload, &config);
                lock(&store).finish(next, body);
                tokio::task::yield_now().await;
            }
        });
        Some(start)
    }
}

fn lock(store: &Mutex<Prebuilt>) -> MutexGuard<'_, Prebuilt> {
    store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_body_is_taken_once() {
        let mut store = Prebuilt::default();
        assert!(store.claim(7));
        assert!(!store.claim(7), "one build per turn");
        store.finish(7, b"body".to_vec());
        assert_eq!(store.bytes(), 4);
        assert!(!store.claim(7), "built already");
        assert_eq!(store.take(7).as_deref(), Some(&b"body"[..]));
        assert_eq!(store.take(7), None);
        assert_eq!((store.bytes(), store.used), (0, 1));
    }

    #[test]
    fn a_dispatch_before_the_build_ends_withdraws_the_claim() {
        let mut store = Prebuilt::default();
        assert!(store.claim(3));
        assert_eq!(
            store.take(3),
            None,
            "not ready: the dispatch builds its own"
        );
        store.finish(3, vec![0; 10]);
        assert_eq!(store.bytes(), 0, "the late result is dropped");
        assert_eq!(store.take(3), None);
    }

    #[test]
    fn nothing_more_is_claimed_past_the_cap() {
        let mut store = Prebuilt::default();
        assert!(store.claim(1));
        store.finish(1, vec![0; MAX_BYTES]);
        assert!(!store.claim(2));
        store.take(1);
        assert!(store.claim(2));
    }
}
