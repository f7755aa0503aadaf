//! Sub-millisecond wake-ups for short-ITL streams.
//!
//! tokio's timer ticks in milliseconds, so a stream paced at 0.2 ms would
//! write five chunks per tick, together. A stream whose next chunk is due
//! within the timer's slack hands its waker and deadline to the
//! [`Pacer`]: one thread per emulator (started on first use) that sleeps
//! on a condition variable until the earliest deadline (the kernel's
//! high-resolution timers: tens of microseconds late) and wakes every
//! stream that is due. No stream spins, so a run's CPU is not burned
//! waiting, and a thread that sleeps is not the one the kernel
//! deschedules when the machine is busy.
//!
//! Owns only the deadlines and wakers; what a stream writes is `body.rs`'s.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;

/// One stream waiting for its deadline.
struct Due {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    /// Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct State {
    due: BinaryHeap<Due>,
    seq: u64,
    running: bool,
    stop: bool,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    changed: Condvar,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wakes streams at sub-millisecond deadlines (see the module doc).
#[derive(Default)]
pub(crate) struct Pacer {
    inner: Arc<Inner>,
}

impl Pacer {
    /// Wakes `waker` once `at` has passed. If the pacer's thread cannot be
    /// started, wakes it at once (the stream then polls until its
    /// deadline).
    pub(crate) fn wake_at(&self, at: Instant, waker: &Waker) {
        let mut state = lock(&self.inner.state);
        if !state.running {
            let inner = Arc::clone(&self.inner);
            let started = std::thread::Builder::new()
                .name("arbor-emulator-pacer".into())
                .spawn(move || run(&inner));
            if started.is_err() {
                drop(state);
                waker.wake_by_ref();
                return;
            }
            state.running = true;
        }
        let earliest = state.due.peek().is_none_or(|d| at < d.at);
        let seq = state.seq;
        state.seq += 1;
        state.due.push(Due {
            at,
            seq,
            waker: waker.clone(),
        });
        drop(state);
        if earliest {
            self.inner.changed.notify_one();
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        lock(&self.inner.state).stop = true;
        self.inner.changed.notify_one();
    }
}

/// The pacer's thread: sleep to the earliest deadline, wake what is due.
fn run(inner: &Inner) {
    let mut ready: Vec<Waker> = Vec::new();
    let mut state = lock(&inner.state);
    loop {
        if state.stop {
            return;
        }
        let now = Instant::now();
        while state.due.peek().is_some_and(|d| d.at <= now) {
            if let Some(d) = state.due.pop() {
                ready.push(d.waker);
            }
        }
        if !ready.is_empty() {
            drop(state);
            for waker in ready.drain(..) {
                waker.wake();
            }
            state = lock(&inner.state);
            continue;
        }
        state = match state.due.peek().map(|d| d.at - now) {
            None => inner.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(wait) => {
                inner
                    .changed
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::task::Wake;
    use std::time::Duration;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn wakes_each_waker_after_its_deadline_in_order() {
        let pacer = Pacer::default();
        let early = Arc::new(Count(AtomicUsize::new(0)));
        let late = Arc::new(Count(AtomicUsize::new(0)));
        let start = Instant::now();
        pacer.wake_at(
            start + Duration::from_millis(40),
            &Waker::from(late.clone()),
        );
        pacer.wake_at(
            start + Duration::from_micros(300),
            &Waker::from(early.clone()),
        );
        while early.0.load(SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(start.elapsed() >= Duration::from_micros(300));
        assert_eq!(late.0.load(SeqCst), 0);
        while late.0.load(SeqCst) == 0 {
            std::thread::yield_now();
        }
        assert!(start.elapsed() >= Duration::from_millis(40));
    }
}
