//! Replaying a run's requests through the server model: each sent when
//! it was recorded as sent, with its recorded prompt and output lengths,
//! and prefix keys that let the model's cache find what a conversation's
//! earlier turns left (the turns of one agent of one play extend one
//! another's prompts: block `i` of a conversation has one key).
//!
//! Owns the replay and what it predicts per request; decides nothing
//! about fitting. Open loop: the recorded send times stand, whatever the
//! model predicts for the requests before.

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
            }
        }
    };
    for &i in &order {
        let r = &requests[i];
        model.advance(r.sent, &mut events);
        take(&mut events, &mut served);
        let blocks = block_keys(r.chain, r.isl, profile.engine.block_size);
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
}
