//! Admission: the request cap (`--max-inflight`) and its FIFO.
//!
//! Owns the count of requests in flight and the turns that are eligible but
//! wait for the cap, in the order they became eligible. Turns already
//! waiting go before a turn made eligible later, even when a slot is free
//! at that instant. Knows slot indices only: what a turn is, and what
//! dispatching means, is the core's business.

use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(super) struct Admission {
    cap: Option<u32>,
    inflight: u32,
    /// Eligible turns waiting for the cap, first come first served.
    waiting: VecDeque<u32>,
}

impl Admission {
    pub(super) fn new(cap: Option<u32>) -> Self {
        Admission {
            cap,
            ..Admission::default()
        }
    }

    #[inline]
    pub(super) fn inflight(&self) -> u32 {
        self.inflight
    }

    #[inline]
    pub(super) fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Nothing in flight and nothing waiting.
    #[inline]
    pub(super) fn is_idle(&self) -> bool {
        self.inflight == 0 && self.waiting.is_empty()
    }

    /// A turn eligible now must wait: the cap is reached, or turns that
    /// became eligible before it still wait.
    #[inline]
    pub(super) fn must_wait(&self) -> bool {
        self.cap
            .is_some_and(|cap| self.inflight >= cap || !self.waiting.is_empty())
    }

    pub(super) fn wait(&mut self, slot: u32) {
        self.waiting.push_back(slot);
    }

    /// The first waiting turn, if the cap now lets one more go.
    #[inline]
    pub(super) fn next(&mut self) -> Option<u32> {
        let cap = self.cap?;
        if self.inflight < cap {
            self.waiting.pop_front()
        } else {
            None
        }
    }

    /// A request was dispatched; returns how many are now in flight.
    #[inline]
    pub(super) fn dispatched(&mut self) -> u32 {
        self.inflight += 1;
        self.inflight
    }

    #[inline]
    pub(super) fn completed(&mut self) {
        self.inflight -= 1;
    }

    /// Drops waiting turns for which `keep` is false (their trajectory
    /// ended).
    pub(super) fn retain(&mut self, keep: impl FnMut(&u32) -> bool) {
        self.waiting.retain(keep);
    }

    /// Nothing waits any more (the run stopped).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_turns_go_first_in_order() {
        let mut a = Admission::new(Some(1));
        assert!(!a.must_wait());
        assert_eq!(a.dispatched(), 1);
        assert!(a.must_wait());
        a.wait(7);
        a.wait(3);
        assert_eq!(a.next(), None);
        a.completed();
        // A slot is free, but turns already wait: a new one joins the end.
        assert!(a.must_wait());
        assert_eq!(a.next(), Some(7));
        assert_eq!(a.dispatched(), 1);
        assert_eq!(a.next(), None);
        assert!(!a.is_idle());
    }

    #[test]
    fn without_a_cap_nothing_waits() {
        let mut a = Admission::new(None);
        for _ in 0..5 {
            assert!(!a.must_wait());
            a.dispatched();
        }
        assert_eq!((a.inflight(), a.next()), (5, None));
    }
}
