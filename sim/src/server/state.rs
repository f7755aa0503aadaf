//! What the engine holds between steps: the requests it has received,
//! who waits and who runs, and the KV pool.
//!
//! Owns the request records and their lookup by id (a slab of slots; the
//! id map is for lookups only, never iterated). Must not: compose steps
//! (`batch.rs`) or keep time (`mod.rs`).

use std::collections::{HashMap, VecDeque};

use super::kv::KvPool;

/// One request inside the engine.
#[derive(Debug, Clone)]
pub(super) struct Req {
    pub id: u64,
    pub prompt: u32,
    /// Output tokens to generate (at least one).
    pub output: u32,
    /// Keys of the prompt's full blocks.
    pub keys: Vec<u64>,
    /// Tokens whose KV is computed (0 again after a preemption).
    pub computed: u32,
    pub generated: u32,
    /// Its KV blocks, in order.
    pub blocks: Vec<u32>,
    /// Leading blocks already named in the prefix cache.
    pub keyed: u32,
    /// Prefix-cache hits at its first admission.
    pub cached_tokens: Option<u32>,
    pub first_token_sent: bool,
    pub cancelled: bool,
}

impl Req {
    /// Tokens of the sequence so far: the prompt and the output sampled.
    pub fn known(&self) -> u32 {
        self.prompt + self.generated
    }

    /// Its next computation is one decode token.
    pub fn is_decoding(&self) -> bool {
        self.generated > 0 && self.computed + 1 == self.known()
    }
}

/// Requests, queues and the pool.
#[derive(Debug, Clone)]
pub(super) struct State {
    slots: Vec<Option<Req>>,
    free_slots: Vec<usize>,
    by_id: HashMap<u64, usize>,
    /// Admitted in order; the last is the newest (preempted first).
    pub running: Vec<usize>,
    /// First come first served; preempted requests go back to the front.
    pub waiting: VecDeque<usize>,
    pub pool: KvPool,
    pub block_size: u32,
    pub prefix_hit_tokens: u64,
    pub prompt_tokens: u64,
    pub preemptions: u64,
    /// Key and block vectors of requests gone, emptied, for new ones: no
    /// allocation per request once the engine is warm.
    spare: Vec<(Vec<u64>, Vec<u32>)>,
    /// The prefix-cache hits of the last request looked at for admission
    /// (kept between steps: the next lookup's guess, `KvPool::hits`).
    pub hits: Vec<u32>,
    /// Scratch of a finished step: the requests that leave.
    pub gone: Vec<usize>,
}

impl State {
    pub fn new(block_size: u32, blocks: u32) -> State {
        State {
            slots: Vec::new(),
            free_slots: Vec::new(),
            by_id: HashMap::new(),
            running: Vec::new(),
            waiting: VecDeque::new(),
            pool: KvPool::new(blocks),
            block_size: block_size.max(1),
            prefix_hit_tokens: 0,
            prompt_tokens: 0,
            preemptions: 0,
            spare: Vec::new(),
            hits: Vec::new(),
            gone: Vec::new(),
        }
    }

    /// Blocks that hold `tokens` tokens.
    pub fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.block_size)
    }

    /// Stores a request; its slot. A second request with a live id
    /// replaces the first's lookup.
    pub fn insert(&mut self, req: Req) -> usize {
        let id = req.id;
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.slots[slot] = Some(req);
                slot
            }
            None => {
                self.slots.push(Some(req));
                self.slots.len() - 1
            }
        };
        self.by_id.insert(id, slot);
        slot
    }

    /// Forgets a request (its blocks must be released first); its
    /// vectors are kept for a later one.
    pub fn remove(&mut self, slot: usize) {
        if let Some(req) = self.slots.get_mut(slot).and_then(Option::take) {
            if self.by_id.get(&req.id) == Some(&slot) {
                self.by_id.remove(&req.id);
            }
            self.free_slots.push(slot);
            let (mut keys, mut blocks) = (req.keys, req.blocks);
            keys.clear();
            blocks.clear();
            self.spare.push((keys, blocks));
        }
    }

    /// Empty key and block vectors for a new request (a gone one's).
    pub fn spare_vectors(&mut self) -> (Vec<u64>, Vec<u32>) {
        self.spare.pop().unwrap_or_default()
    }

    pub fn slot_of(&self, id: u64) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The request in `slot`. Slots in the queues are always filled.
    pub fn req(&self, slot: usize) -> &Req {
        self.slots[slot]
            .as_ref()
            .expect("queued slot holds a request")
    }

    pub fn req_mut(&mut self, slot: usize) -> &mut Req {
        self.slots[slot]
            .as_mut()
            .expect("queued slot holds a request")
    }

    /// Releases `slot`'s blocks (a preemption, a completion, a cancel).
    pub fn release_blocks(&mut self, slot: usize) {
        let mut blocks = std::mem::take(&mut self.req_mut(slot).blocks);
        self.pool.release(&blocks);
        blocks.clear();
        let req = self.req_mut(slot);
        req.blocks = blocks;
        req.keyed = 0;
        req.computed = 0;
    }

    /// Names `slot`'s blocks in `range` by its prompt keys there (full,
    /// computed prompt blocks).
    pub fn name_blocks(&mut self, slot: usize, range: std::ops::Range<usize>) {
        if let Some(req) = self.slots[slot].as_ref() {
            self.pool
                .cache_all(&req.blocks[range.clone()], &req.keys[range]);
        }
    }

    /// Gives `slot` blocks up to `count` (the caller checked there are).
    pub fn grow_blocks(&mut self, slot: usize, count: u32) {
        let Some(req) = self.slots[slot].as_mut() else {
            return;
        };
        // Most calls (a decode step's) need no new block.
        if req.blocks.len() < count as usize {
            self.pool.allocate_into(&mut req.blocks, count as usize);
        }
    }
}
