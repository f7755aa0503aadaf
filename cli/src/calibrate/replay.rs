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
//! about fitting. Open loop: the recorded send times stand, whatever the
//! model predicts for the requests before.

use std::collections::BTreeMap;

use arbor_engine::time::Nanos;

use super::runs::Observed;
use arbor_sim::server::{ModelEvent, ModelRequest, Profile, ServerModel};

/// One request as the model served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Served {
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
pub fn replay(profile: &Profile, requests: &[Observed]) -> Vec<Served> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| (requests[i].sent, i));
    let mut model = ServerModel::new(profile);
    let mut served = vec![Served::default(); requests.len()];
    let mut events = Vec::new();
    let mut conversations = Conversations::default();
    let take = |events: &mut Vec<ModelEvent>, served: &mut [Served]| {
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
                    if let Some(s) = served.get_mut(id as usize) {
                        s.done = at;
                    }
                }
                // Not reported: this model has no token events.
                ModelEvent::Token { .. } => {}
            }
        }
    };
    for &i in &order {
        let r = &requests[i];
        model.advance(r.sent, &mut events);
        take(&mut events, &mut served);
        let blocks = conversations.keys(i, r, profile.engine.block_size);
        model.submit(
            r.sent,
            &ModelRequest {
                id: i as u64,
                prompt_tokens: r.isl,
                output_tokens: r.osl,
                blocks: &blocks,
            },
        );
    }
    while let Some(at) = model.next_event_at() {
        model.advance(at, &mut events);
        take(&mut events, &mut served);
    }
    served
}

#[cfg(test)]
mod tests {
    use super::*;

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
