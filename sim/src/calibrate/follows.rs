//! Which request each request of a run was sent after. In a closed loop
//! a lane sends its next turn (or its next play's first) when the one
//! before it ends, plus the recorded gap; a play of an open loop sends a
//! turn when the turns it waits on end. The replay follows these links,
//! so a model slower or faster than the server moves the sends that
//! depend on it, as the client would have, instead of piling requests of
//! one conversation on top of each other.
//!
//! Owns the link rule: within a thread (the lane, else the play), a
//! request follows the request that ended last before it was sent; the
//! wait is the recorded time from that end to the send. A request with
//! nothing ended before it in its thread was sent on its own.

use std::collections::BTreeMap;

use super::request::{After, Observed};

/// Sets every request's `after` from the requests of its thread. One
/// sort by end and one by send per thread, then a single sweep: a
/// run of one lane over hours has tens of thousands of requests.
pub fn link(requests: &mut [Observed]) {
    let mut threads: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, r) in requests.iter().enumerate() {
        threads.entry(r.thread).or_default().push(i);
    }
    for members in threads.values() {
        let mut by_end = members.clone();
        by_end.sort_by_key(|&j| (requests[j].done, j));
        let mut by_send = members.clone();
        by_send.sort_by_key(|&i| (requests[i].sent, i));
        // `by_end[..ended]` ended at or before the send in hand.
        let mut ended = 0;
        for &i in &by_send {
            let sent = requests[i].sent;
            while ended < by_end.len() && requests[by_end[ended]].done <= sent {
                ended += 1;
            }
            let before = by_end[..ended].iter().rev().copied().find(|&j| j != i);
            requests[i].after = before.map(|j| After {
                request: j,
                wait: sent - requests[j].done,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(thread: u64, sent: u64, done: u64) -> Observed {
        let mut r = Observed::stamped(sent, sent + 1, done, 16, 2);
        r.thread = thread;
        r
    }

    #[test]
    fn a_request_follows_the_last_end_before_its_send_in_its_thread() {
        let mut requests = vec![
            request(0, 0, 10),
            request(0, 0, 15), // a sibling running beside the first
            request(0, 17, 30),
            request(1, 12, 20), // another lane: never followed
            request(0, 31, 40),
        ];
        link(&mut requests);
        assert_eq!(requests[0].after, None);
        assert_eq!(requests[1].after, None);
        assert_eq!(
            requests[2].after,
            Some(After {
                request: 1,
                wait: 2
            })
        );
        assert_eq!(requests[3].after, None);
        assert_eq!(
            requests[4].after,
            Some(After {
                request: 2,
                wait: 1
            })
        );
    }
}
