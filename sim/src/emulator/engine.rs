//! The batching server model (`crate::server`) run in real time: what the
//! emulator serves under a profile (`arbor emulate --profile`).
//!
//! One [`ServerModel`] is shared by every connection. A request is
//! submitted at its arrival (monotonic ns since the emulator started) and
//! gets a [`Ticket`]; one thread sleeps until the model's next event
//! (the model reports every token: [`ServerModel::with_token_events`]),
//! advances it to the wall clock and fills the tickets: the first token
//! (with the model's `cached_tokens`), each later token at the end of the
//! step that made it, then the end. So a stream writes each token when
//! its step ends, and a client's stamps are steps, as a real server's
//! are. A stream that goes away unfinished cancels its request
//! ([`Submitted`]'s drop).
//!
//! Owns the model, its thread and the tickets. Must not: write response
//! bytes (that is `body.rs`'s) or read a request body.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::server::{Gauges, ModelEvent, ModelRequest, Profile, ServerModel};

/// What a request's stream learns from the model at its first token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FirstToken {
    /// When the first token reaches the client (ns since start).
    pub at_ns: u64,
    pub cached_tokens: u32,
}

#[derive(Default)]
struct TicketState {
    first: Option<FirstToken>,
    /// When each output token reached the client (ns since start), the
    /// first one's first.
    tokens: Vec<u64>,
    /// When the last token reached the client (ns since start).
    done: Option<u64>,
    waker: Option<Waker>,
}

/// One request's progress in the model.
#[derive(Default)]
pub(crate) struct Ticket {
    state: Mutex<TicketState>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ticket {
    /// A ticket with room for `output_tokens` stamps: the model's thread
    /// records each token without growing the list.
    fn for_output(output_tokens: u32) -> Ticket {
        Ticket {
            state: Mutex::new(TicketState {
                tokens: Vec::with_capacity(output_tokens as usize),
                ..TicketState::default()
            }),
        }
    }

    fn update(&self, f: impl FnOnce(&mut TicketState)) {
        let waker = {
            let mut state = lock(&self.state);
            f(&mut state);
            state.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// What `read` finds once the model produced it; else arms `cx`.
    fn poll<T>(&self, cx: &mut Context<'_>, read: impl Fn(&TicketState) -> Option<T>) -> Poll<T> {
        let mut state = lock(&self.state);
        match read(&state) {
            Some(found) => Poll::Ready(found),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// The first token, once the model produced it; else arms `cx`.
    pub(crate) fn poll_first(&self, cx: &mut Context<'_>) -> Poll<FirstToken> {
        self.poll(cx, |t| t.first)
    }

    /// When output token `k` (from 0) reached the client, once the model
    /// produced it; else arms `cx`. Once the request is done every token
    /// has (a refused request's come with its end).
    pub(crate) fn poll_token(&self, cx: &mut Context<'_>, k: u32) -> Poll<u64> {
        self.poll(cx, |t| t.tokens.get(k as usize).copied().or(t.done))
    }

    /// The end, once the model produced it; else arms `cx`.
    pub(crate) fn poll_done(&self, cx: &mut Context<'_>) -> Poll<u64> {
        self.poll(cx, |t| t.done)
    }
}

struct ModelState {
    model: ServerModel,
    /// Requests in the model, by id.
    tickets: BTreeMap<u64, Arc<Ticket>>,
    next_id: u64,
    running: bool,
    stop: bool,
    events: Vec<ModelEvent>,
}

struct Inner {
    state: Mutex<ModelState>,
    changed: Condvar,
    start: Instant,
}

impl Inner {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn instant(&self, ns: u64) -> Instant {
        self.start + Duration::from_nanos(ns)
    }
}

/// The shared model and its thread (see the module doc).
pub(crate) struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// A model of `profile` whose clock starts at `start`.
    pub(crate) fn new(profile: &Profile, start: Instant) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                state: Mutex::new(ModelState {
                    model: ServerModel::new(profile).with_token_events(),
                    tickets: BTreeMap::new(),
                    next_id: 0,
                    running: false,
                    stop: false,
                    events: Vec::new(),
                }),
                changed: Condvar::new(),
                start,
            }),
        }
    }

    /// Submits a request now: `prompt_tokens`, `output_tokens`, the keys
    /// of its prompt's full blocks. If the model's thread cannot be
    /// started, None (the caller answers 500).
    pub(crate) fn submit(
        &self,
        prompt_tokens: u32,
        output_tokens: u32,
        blocks: &[u64],
    ) -> Option<Submitted> {
        let mut state = lock(&self.inner.state);
        if !state.running {
            let inner = Arc::clone(&self.inner);
            std::thread::Builder::new()
                .name("arbor-emulator-model".into())
                .spawn(move || run(&inner))
                .ok()?;
            state.running = true;
        }
        let now = self.inner.now_ns();
        advance(&mut state, now);
        let id = state.next_id;
        state.next_id += 1;
        let ticket = Arc::new(Ticket::for_output(output_tokens));
        state.tickets.insert(id, Arc::clone(&ticket));
        state.model.submit(
            now,
            &ModelRequest {
                id,
                prompt_tokens,
                output_tokens,
                blocks,
            },
        );
        drop(state);
        self.inner.changed.notify_one();
        Some(Submitted {
            inner: Arc::clone(&self.inner),
            id,
            ticket,
        })
    }

    /// The model's gauges now.
    pub(crate) fn gauges(&self) -> Gauges {
        lock(&self.inner.state).model.gauges()
    }

    /// An instant `ns` after the model's start.
    pub(crate) fn instant(&self, ns: u64) -> Instant {
        self.inner.instant(ns)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        lock(&self.inner.state).stop = true;
        self.inner.changed.notify_one();
    }
}

/// A request in the model. Dropped before its end (the client went
/// away), it is cancelled.
pub(crate) struct Submitted {
    inner: Arc<Inner>,
    id: u64,
    pub(crate) ticket: Arc<Ticket>,
}

impl Submitted {
    /// Waits for the first token.
    pub(crate) fn first(&self) -> impl Future<Output = FirstToken> + '_ {
        std::future::poll_fn(|cx| self.ticket.poll_first(cx))
    }

    /// Waits for the end.
    pub(crate) fn done(&self) -> impl Future<Output = u64> + '_ {
        std::future::poll_fn(|cx| self.ticket.poll_done(cx))
    }

    /// An instant `ns` after the model's start.
    pub(crate) fn instant(&self, ns: u64) -> Instant {
        self.inner.instant(ns)
    }
}

impl Drop for Submitted {
    fn drop(&mut self) {
        if lock(&self.ticket.state).done.is_some() {
            return;
        }
        let mut state = lock(&self.inner.state);
        let now = self.inner.now_ns();
        advance(&mut state, now);
        state.model.cancel(now, self.id);
        state.tickets.remove(&self.id);
        drop(state);
        self.inner.changed.notify_one();
    }
}

/// Advances the model to `now` and hands its events to the tickets.
fn advance(state: &mut ModelState, now: u64) {
    let mut events = std::mem::take(&mut state.events);
    state.model.advance(now, &mut events);
    for event in events.drain(..) {
        match event {
            ModelEvent::FirstToken {
                id,
                at,
                cached_tokens,
            } => {
                if let Some(ticket) = state.tickets.get(&id) {
                    ticket.update(|t| {
                        t.first = Some(FirstToken {
                            at_ns: at,
                            cached_tokens,
                        });
                        t.tokens.push(at);
                    });
                }
            }
            ModelEvent::Token { id, at } => {
                if let Some(ticket) = state.tickets.get(&id) {
                    ticket.update(|t| t.tokens.push(at));
                }
            }
            ModelEvent::Done { id, at } => {
                if let Some(ticket) = state.tickets.remove(&id) {
                    ticket.update(|t| {
                        if t.first.is_none() {
                            t.first = Some(FirstToken {
                                at_ns: at,
                                cached_tokens: 0,
                            });
                        }
                        t.done = Some(at);
                    });
                }
            }
        }
    }
    state.events = events;
}

/// The model's thread: advance to now, sleep until the next event.
fn run(inner: &Inner) {
    let mut state = lock(&inner.state);
    loop {
        if state.stop {
            return;
        }
        let now = inner.now_ns();
        advance(&mut state, now);
        state = match state.model.next_event_at() {
            None => inner.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(at) => {
                // At least a microsecond: a model that cannot progress
                // must not spin.
                let wait = at.saturating_sub(now).max(1_000);
                inner
                    .changed
                    .wait_timeout(state, Duration::from_nanos(wait))
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}
