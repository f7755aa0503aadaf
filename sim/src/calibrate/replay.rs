//! Replaying a run's requests through the server model: each sent when
//! it was recorded as sent, with its recorded prompt and output lengths,
//! and prefix keys that let the model's cache find what a conversation's
//! earlier turns left (the turns of one agent of one play extend one
//! another's prompts: block `i` of a conversation has one key), as far
//! as the server said it found them: a request whose server reported
//! `cached_tokens` reuses its conversation's keys for those whole blocks
//! only and gets fresh keys for the rest (a server without a prefix
//! cache, or one that evicted, reports fewer hits than a conversation
//! could have; the model must not find more).
//!
//! Owns the replay and what it predicts per request; decides nothing
//! about fitting. Sends follow the model as the client followed the
//! server: a request sent on its own goes in at its recorded send, one
//! sent after another's end (`follows`) goes in at the model's end of
//! that one plus the recorded wait. (Replayed open loop, a model slower
//! than the server piled a conversation's next turns onto its unfinished
//! ones, and the queueing that made was fitted away.)

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use arbor_engine::time::Nanos;

use super::request::Observed;
use crate::server::{ModelEvent, ModelRequest, Profile, ServerModel};

/// One request as the model served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Served {
    /// When the replay sent it (its recorded send, or the model's end of
    /// the request it followed plus the recorded wait).
    pub sent: Nanos,
    pub first: Nanos,
    pub done: Nanos,
    pub cached_tokens: u32,
}

/// The prefix keys of a prompt of `prompt` tokens in conversation
/// `chain`: one per full block of `block_size` tokens.
pub fn block_keys(chain: u64, prompt: u32, block_size: u32) -> Vec<u64> {
    let blocks = prompt / block_size.max(1);
    (0..u64::from(blocks))
        .map(|i| mix(chain ^ mix(i.wrapping_add(0x9e37_79b9_7f4a_7c15))))
        .collect()
}

/// The keys of each conversation's latest prompt, in send order: a
/// request that reported `cached` tokens keeps the conversation's keys
/// of its first `cached / block_size` blocks (those of the latest prompt
/// where it had them, else the conversation's own) and takes fresh ones,
/// unique to it, for the rest; a request that reported nothing keeps
/// every block of the conversation.
#[derive(Debug, Default)]
struct Conversations {
    latest: BTreeMap<u64, Vec<u64>>,
}

impl Conversations {
    fn keys(&mut self, index: usize, r: &Observed, block_size: u32) -> Vec<u64> {
        let own = block_keys(r.chain, r.isl, block_size);
        let latest = self.latest.entry(r.chain).or_default();
        let Some(cached) = r.cached else {
            latest.clone_from(&own);
            return own;
        };
        let kept = (cached / block_size.max(1)) as usize;
        let fresh = mix(r.chain ^ mix(index as u64 ^ 0x5851_f42d_4c95_7f2d));
        let keys: Vec<u64> = own
            .iter()
            .enumerate()
            .map(|(i, key)| match latest.get(i) {
                Some(&earlier) if i < kept => earlier,
                _ if i < kept => *key,
                _ => mix(fresh ^ mix(i as u64)),
            })
            .collect();
        latest.clone_from(&keys);
        keys
    }
}

/// SplitMix64's finalizer: a fixed bijection that spreads bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The model's answer for every request of `requests`, in their order.
/// A request sent on its own goes in at its recorded send; one that
/// followed another (`Observed::after`) goes in when the model ends that
/// one, plus the recorded wait.
pub fn replay(profile: &Profile, requests: &[Observed]) -> Vec<Served> {
    let mut followers: Vec<Vec<usize>> = vec![Vec::new(); requests.len()];
    let mut sends = Sends::new();
    for (i, r) in requests.iter().enumerate() {
        match r.after.filter(|a| a.request < requests.len()) {
            Some(after) => followers[after.request].push(i),
            None => sends.push(Reverse((r.sent, i))),
        }
    }
    let mut model = ServerModel::new(profile);
    let mut served = vec![Served::default(); requests.len()];
    let mut events = Vec::new();
    let mut conversations = Conversations::default();
    // Takes the model's events: ends send the requests that follow them.
    let take = |events: &mut Vec<ModelEvent>, served: &mut [Served], sends: &mut Sends| {
        for event in events.drain(..) {
            match event {
                ModelEvent::FirstToken {
                    id,
                    at,
                    cached_tokens,
                } => {
                    if let Some(s) = served.get_mut(id as usize) {
                        s.first = at;
                        s.cached_tokens = cached_tokens;
                    }
                }
                ModelEvent::Done { id, at } => {
                    let id = id as usize;
                    if let Some(s) = served.get_mut(id) {
                        s.done = at;
                    }
                    for &f in followers.get(id).map_or(&[][..], Vec::as_slice) {
                        let wait = requests[f].after.map_or(0, |a| a.wait);
                        sends.push(Reverse((at.saturating_add(wait), f)));
                    }
                }
                // Not reported: this model has no token events.
                ModelEvent::Token { .. } => {}
            }
        }
    };
    loop {
        let next_event = model.next_event_at();
        let next_send = sends.peek().map(|Reverse((at, _))| *at);
        // An event at the send's instant comes first: an end may free the
        // slot the send takes, or send a follower at that instant.
        if let Some(at) = next_event.filter(|&e| next_send.is_none_or(|s| e <= s)) {
            model.advance(at, &mut events);
            take(&mut events, &mut served, &mut sends);
            continue;
        }
        let Some(Reverse((at, i))) = sends.pop() else {
            break;
        };
        model.advance(at, &mut events);
        take(&mut events, &mut served, &mut sends);
        let r = &requests[i];
        if let Some(s) = served.get_mut(i) {
            s.sent = at;
        }
        let blocks = conversations.keys(i, r, profile.engine.block_size);
        model.submit(
            at,
            &ModelRequest {
                id: i as u64,
                prompt_tokens: r.isl,
                output_tokens: r.osl,
                blocks: &blocks,
            },
        );
    }
    served
}

/// Sends not made yet, earliest first (ties: the request's index).
type Sends = BinaryHeap<Reverse<(Nanos, usize)>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_is_sent_at_the_models_end_of_the_request_before_it() {
        let profile = Profile::from_toml_str(
            include_str!("../../../profiles/example.toml"),
            std::path::Path::new("example.toml"),
        )
        .expect("the example profile parses");
        const MS: Nanos = 1_000_000;
        // The server took a second over the first turn; the client sent
        // the second 1 ms after its end. A third, on its own, at 5 ms.
        let mut first = Observed::stamped(0, 900 * MS, 1_000 * MS, 100, 8);
        first.thread = 1;
        let mut second = Observed::stamped(1_001 * MS, 1_100 * MS, 1_200 * MS, 120, 8);
        second.thread = 1;
        second.after = Some(super::super::request::After {
            request: 0,
            wait: MS,
        });
        let lone = Observed::stamped(5 * MS, 50 * MS, 90 * MS, 50, 4);
        let served = replay(&profile, &[first, second, lone]);
        assert_eq!(served[0].sent, 0);
        assert!(served[0].done < 900 * MS, "the model is faster: {served:?}");
        assert_eq!(served[1].sent, served[0].done + MS, "{served:?}");
        assert!(served[1].first > served[1].sent);
        assert_eq!(
            served[2].sent,
            5 * MS,
            "a request on its own keeps its send"
        );
    }

    #[test]
    fn keys_are_per_conversation_and_position() {
        let a = block_keys(1, 40, 16);
        assert_eq!(a.len(), 2);
        assert_eq!(block_keys(1, 70, 16)[..2], a[..]);
        assert_ne!(block_keys(2, 40, 16), a);
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn reported_hits_bound_the_models_hits() {
        let mut conversations = Conversations::default();
        let mut turn = |index: usize, isl: u32, cached: Option<u32>| {
            let mut r = Observed::stamped(0, 1, 2, isl, 1);
            r.chain = 7;
            r.cached = cached;
            conversations.keys(index, &r, 16)
        };
        let first = turn(0, 64, Some(0));
        assert!(first.iter().all(|k| !block_keys(7, 64, 16).contains(k)));
        // The second turn found 40 tokens: two whole blocks of the first.
        let second = turn(1, 96, Some(40));
        assert_eq!(second[..2], first[..2]);
        assert!(second[2..].iter().all(|k| !first.contains(k)));
        // Nothing reported: the conversation's own keys.
        assert_eq!(turn(2, 96, None), block_keys(7, 96, 16));
        // After it, a full hit is the conversation's keys.
        assert_eq!(turn(3, 112, Some(96))[..6], block_keys(7, 96, 16)[..]);
    }
}
