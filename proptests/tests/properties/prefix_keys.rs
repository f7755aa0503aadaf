//! The server model's prefix-cache keys and hits: what the plan predicts
//! is what the emulator serves, over agentic trees with shared prefixes
//! and eviction pressure.

use std::collections::VecDeque;
use std::path::Path;

use arbor_backends::live::request::{build_turn_body, Api, BodyConfig};
use arbor_engine::model::{
    Agent, AgentKind, Message, RequestShape, Role, ShapeApi, ToolCall, ToolDef, ToolPart,
    ToolResult, Tree, Turn, TurnText,
};
use arbor_engine::prompt::VOCABULARY;
use arbor_engine::Workload;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::emulator::model_request_of;
use arbor_sim::server::keys::{marker_tokens, PromptKeys};
use arbor_sim::server::{ModelEvent, ModelRequest, Profile, ServerModel};
use proptest::prelude::*;

/// Agentic trees with subagents and prompts that grow as prefixes.
fn synthetic(seed: u64, hash_ids: bool) -> Workload {
    let spec: SyntheticSpec = format!(
        "trees=2,turns=5,child_turns=3,depth=1,spawn=0.4,hash_ids={hash_ids},isl=150,isl_growth=60,max_isl=600,osl=12,seed={seed}"
    )
    .parse()
    .expect("spec parses");
    spec.generate()
}

/// Recorded text: vocabulary words mixed with other bytes (punctuation,
/// capitals, non-ASCII, words not in the vocabulary).
fn content() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(VOCABULARY.to_vec()).prop_map(str::to_string),
            "[a-z A-Z0-9,.\n\"é]{0,14}",
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

fn role() -> impl Strategy<Value = Role> {
    prop::sample::select(vec![Role::System, Role::User, Role::Assistant, Role::Tool])
}

/// A tool call: arguments are JSON objects of recorded text.
fn tool_call() -> impl Strategy<Value = ToolCall> {
    ("[a-z0-9_]{1,8}", "[a-z_]{1,8}", content()).prop_map(|(id, name, value)| ToolCall {
        id,
        name,
        arguments: serde_json::json!({ "value": value }).to_string(),
    })
}

/// A message: an assistant's may carry tool calls, a tool message the
/// call it answers.
fn message() -> impl Strategy<Value = Message> {
    (
        role(),
        content(),
        prop::collection::vec(tool_call(), 0..3),
        prop::option::of("[a-z0-9_]{1,8}"),
    )
        .prop_map(|(role, content, calls, call_id)| Message {
            role,
            content,
            tool: match role {
                Role::Assistant if !calls.is_empty() => Some(Box::new(ToolPart::Calls(calls))),
                Role::Tool => call_id.map(|call_id| {
                    Box::new(ToolPart::Result(ToolResult {
                        call_id,
                        name: None,
                    }))
                }),
                _ => None,
            },
        })
}

fn recorded_turn() -> impl Strategy<Value = Turn> {
    (
        any::<bool>(),
        prop::collection::vec(message(), 1..4),
        prop::option::of(content()),
        prop::collection::vec(tool_call(), 0..2),
        any::<bool>(),
    )
        .prop_map(
            |(extends_previous, messages, response, response_calls, shaped)| Turn {
                isl: 1,
                text: Some(Box::new(TurnText {
                    extends_previous,
                    messages,
                    response,
                    response_calls,
                    shape: shaped.then_some(0),
                })),
                ..Turn::default()
            },
        )
}

/// Tool definitions recorded in chat's form or in Messages': the recorded
/// text and the neutral definitions agree, as a reader makes them.
fn request_shape() -> impl Strategy<Value = RequestShape> {
    (
        prop::collection::vec(
            ("[a-z_]{1,8}", prop::option::of(content()), content()),
            1..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(tools, chat)| {
            let tool_defs: Vec<ToolDef> = tools
                .into_iter()
                .map(|(name, description, text)| ToolDef {
                    name,
                    description,
                    schema: Some(
                        serde_json::json!({"type": "object", "description": text})
                            .to_string()
                            .into(),
                    ),
                })
                .collect();
            let recorded: Vec<serde_json::Value> = tool_defs
                .iter()
                .map(|t| {
                    let schema: serde_json::Value =
                        serde_json::from_str(t.schema.as_deref().unwrap_or("{}")).unwrap();
                    let mut def = serde_json::json!({"name": t.name});
                    if let Some(d) = &t.description {
                        def["description"] = d.clone().into();
                    }
                    if chat {
                        def["parameters"] = schema;
                        serde_json::json!({"type": "function", "function": def})
                    } else {
                        def["input_schema"] = schema;
                        def
                    }
                })
                .collect();
            RequestShape {
                api: if chat {
                    ShapeApi::Chat
                } else {
                    ShapeApi::Messages
                },
                tools: Some(serde_json::Value::from(recorded).to_string().into()),
                tool_defs,
                tool_choice: Some(r#""auto""#.into()),
                fields: Vec::new(),
            }
        })
}

fn recorded_tree() -> impl Strategy<Value = Tree> {
    (
        prop::collection::vec(recorded_turn(), 1..5),
        request_shape(),
    )
        .prop_map(|(turns, shape)| Tree {
            id: "recorded".into(),
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns,
            }],
            shapes: vec![shape],
            ..Tree::default()
        })
}

fn marker() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        "\\[rid:[0-9a-f]{12}\\]\n\n".prop_map(Some),
        "[a-z ]{0,7}".prop_map(Some),
    ]
}

/// Every turn of `trees`, as (tree, agent, turn).
fn turns(trees: &[Tree]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (t, tree) in trees.iter().enumerate() {
        for (a, agent) in tree.agents.iter().enumerate() {
            for turn in 0..agent.turns.len() {
                out.push((t, a, turn));
            }
        }
    }
    out
}

/// What the emulator under a profile submits for the live chat body of
/// a turn: its prompt tokens and block keys.
fn emulator_side(
    tree: &Tree,
    agent: usize,
    turn: usize,
    marker: Option<&str>,
    api: Api,
    block_size: u32,
) -> (u32, Vec<u64>) {
    let config = BodyConfig {
        model: "m".into(),
        api,
        ..BodyConfig::default()
    };
    let body = build_turn_body(&config, tree, agent, turn, 8, marker);
    model_request_of(api.path(), &body, block_size).expect("the emulator reads arbor's bodies")
}

/// A plain prefix cache of a pool of blocks kept in least-recently-used
/// order, for requests served one at a time (each prefilled in one step):
/// the leading full prompt blocks found are hits (at least one prompt
/// token is left to compute), every other block the request needs is
/// taken from the least recently used end (forgetting its key), its full
/// prompt blocks are named unless their key is still held, and at its end
/// its blocks go back to the recent end, its first block last.
struct Reference {
    block_size: u32,
    /// Free blocks, least recently used first: the key each holds.
    free: VecDeque<Option<u64>>,
}

impl Reference {
    fn new(block_size: u32, blocks: u32) -> Reference {
        Reference {
            block_size,
            free: (0..blocks).map(|_| None).collect(),
        }
    }

    fn serve(&mut self, keys: &[u64], prompt: u32, output: u32) -> u32 {
        let bs = self.block_size;
        let keys = &keys[..keys.len().min((prompt / bs) as usize)];
        let most = ((prompt - 1) / bs) as usize;
        let mut held: Vec<Option<u64>> = Vec::new();
        for &key in keys.iter().take(most) {
            match self.free.iter().position(|b| *b == Some(key)) {
                Some(i) => held.push(self.free.remove(i).expect("found")),
                None => break,
            }
        }
        let hits = held.len();
        let take = |held: &mut Vec<Option<u64>>, free: &mut VecDeque<Option<u64>>| {
            free.pop_front().expect("the pool holds a request");
            held.push(None);
        };
        while (held.len() as u32) < prompt.div_ceil(bs) {
            take(&mut held, &mut self.free);
        }
        for (i, &key) in keys.iter().enumerate().skip(hits) {
            let named = self.free.contains(&Some(key)) || held.contains(&Some(key));
            if !named {
                held[i] = Some(key);
            }
        }
        while (held.len() as u32) < (prompt + output - 1).div_ceil(bs) {
            take(&mut held, &mut self.free);
        }
        self.free.extend(held.into_iter().rev());
        hits as u32 * bs
    }
}

/// A model of the example profile with `blocks` blocks of `block_size`
/// tokens, every prompt prefilled in one step.
fn model(block_size: u32, blocks: u32) -> ServerModel {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/example.toml");
    let mut profile = Profile::from_toml_path(&path).expect("bundled profile parses");
    profile.engine.block_size = block_size;
    profile.engine.num_gpu_blocks = blocks;
    profile.engine.max_num_batched_tokens = 1 << 16;
    ServerModel::new(&profile)
}

/// Submits `requests` (prompt, output, keys) at `gap` ns apart (0: each
/// after the previous one's end); the events, in order.
fn drive(model: &mut ServerModel, requests: &[(u32, u32, Vec<u64>)], gap: u64) -> Vec<ModelEvent> {
    let mut events = Vec::new();
    let mut now = 0;
    for (id, (prompt, output, keys)) in requests.iter().enumerate() {
        if gap == 0 {
            while let Some(at) = model.next_event_at() {
                now = now.max(at);
                model.advance(now, &mut events);
            }
        } else {
            now += gap;
            model.advance(now, &mut events);
        }
        model.submit(
            now,
            &ModelRequest {
                id: id as u64,
                prompt_tokens: *prompt,
                output_tokens: *output,
                blocks: keys,
            },
        );
    }
    while let Some(at) = model.next_event_at() {
        now = now.max(at);
        model.advance(now, &mut events);
    }
    events
}

fn first_tokens(events: &[ModelEvent], n: usize) -> Vec<u32> {
    let mut cached = vec![u32::MAX; n];
    for e in events {
        if let ModelEvent::FirstToken {
            id, cached_tokens, ..
        } = *e
        {
            cached[id as usize] = cached_tokens;
        }
    }
    cached
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The plan's block keys of a turn are exactly the keys the emulator
    /// under a profile reads from the body the live client sends for it:
    /// synthesized prompts (hash ids or virtual blocks) and recorded
    /// messages (with tool definitions recorded as chat's or Messages',
    /// tool calls and tool results), with or without a cache-bust marker,
    /// in any block size;
    /// a synthesized prompt is its planned tokens plus the marker's. The
    /// keys computed from the agent's previous turn's keys
    /// (`PromptKeys::next_turn`, what the virtual replay does) are the
    /// same.
    #[test]
    fn plan_keys_are_the_keys_of_the_live_body(
        seed in 0u64..1000,
        hash_ids in any::<bool>(),
        recorded in recorded_tree(),
        marker in marker(),
        block_size in prop_oneof![Just(1u32), Just(3), Just(16), Just(64)],
    ) {
        let mut trees = synthetic(seed, hash_ids).trees;
        trees.push(recorded);
        let marker = marker.as_deref();
        let mut plan = PromptKeys::new(block_size);
        let (mut keys, mut previous, mut extended) = (Vec::new(), Vec::new(), Vec::new());
        for (t, a, turn) in turns(&trees) {
            let tree = &trees[t];
            let tokens = plan.turn(tree, a, turn, marker, &mut keys);
            let (served, expected) = emulator_side(tree, a, turn, marker, Api::Chat, block_size);
            prop_assert_eq!(&keys, &expected, "tree {} agent {} turn {}", t, a, turn);
            prop_assert_eq!(tokens, u64::from(served));
            if turn > 0 {
                let again = plan.next_turn(tree, a, turn, marker, &previous, &mut extended);
                prop_assert_eq!(&extended, &expected, "from turn {}", turn - 1);
                prop_assert_eq!(again, tokens);
            }
            previous.clone_from(&keys);
            let isl = tree.agents[a].turns[turn].isl;
            if tree.agents[a].turns[turn].text.is_none() {
                prop_assert_eq!(served, isl + marker.map_or(0, marker_tokens));
                // A Messages body of a synthesized turn is read the same.
                let messages = emulator_side(tree, a, turn, marker, Api::Messages, block_size);
                prop_assert_eq!(&messages.1, &expected);
            }
        }
    }

    /// Under eviction pressure (a pool of a few prompts), the model serves
    /// the same hits whether its keys come from the plan or from the live
    /// bodies, one request at a time or overlapping; one at a time, its
    /// hits are a plain least-recently-used prefix cache's.
    #[test]
    fn the_models_hits_are_a_plain_lru_prefix_cache(
        seed in 0u64..1000,
        hash_ids in any::<bool>(),
        marker in marker(),
        block_size in prop_oneof![Just(4u32), Just(16)],
        pool in 48u32..200,
        order in any::<u64>(),
    ) {
        let trees = synthetic(seed, hash_ids).trees;
        let marker = marker.as_deref();
        let mut all = turns(&trees);
        // Any order: agents and trees interleave.
        all.sort_by_key(|&(t, a, turn)| {
            (order ^ ((t as u64) << 40 | (a as u64) << 20 | turn as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        });
        let plan = PromptKeys::new(block_size);
        let mut planned = Vec::new();
        let mut served = Vec::new();
        for &(t, a, turn) in &all {
            let tree = &trees[t];
            let mut keys = Vec::new();
            let tokens = plan.turn(tree, a, turn, marker, &mut keys);
            let output = tree.agents[a].turns[turn].osl.clamp(1, 16);
            planned.push((tokens as u32, output, keys));
            let (tokens, keys) = emulator_side(tree, a, turn, marker, Api::Chat, block_size);
            served.push((tokens, output, keys));
        }
        // The pool holds the largest request (600 tokens, the marker, the output).
        let blocks = pool.max(640u32.div_ceil(block_size) + 2);
        for gap in [0, 3_000_000] {
            let from_plan = drive(&mut model(block_size, blocks), &planned, gap);
            let from_live = drive(&mut model(block_size, blocks), &served, gap);
            prop_assert_eq!(&from_plan, &from_live);
        }
        let events = drive(&mut model(block_size, blocks), &planned, 0);
        let hits = first_tokens(&events, planned.len());
        let mut reference = Reference::new(block_size, blocks);
        for (i, (prompt, output, keys)) in planned.iter().enumerate() {
            let expected = reference.serve(keys, *prompt, *output);
            prop_assert_eq!(hits[i], expected, "request {}", i);
        }
    }
}
