//! The workload model: what a recording says happened.
//!
//! Owns `Workload`, `Tree`, `Agent`, `Turn` and `Edge`. Loaders produce these;
//! [`crate::derive`] turns recorded times into edges; [`crate::dag`] compiles
//! trees into flat arrays for the scheduler. This module holds data and the
//! small invariants that make it well-formed; it does no I/O and no
//! scheduling.
//!
//! Times inside a tree are nanoseconds from the tree's own start (its
//! `arrival`), so a tree can be replayed at any offset.

use crate::time::Nanos;

/// A whole corpus: the trees to replay, in a stable order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    pub trees: Vec<Tree>,
}

impl Workload {
    pub fn agent_count(&self) -> usize {
        self.trees.iter().map(|t| t.agents.len()).sum()
    }

    pub fn turn_count(&self) -> usize {
        self.trees.iter().map(Tree::turn_count).sum()
    }
}

/// One recorded agent session: a root agent and its subagents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    /// Identifier from the source (file name, trace id, session id).
    pub id: String,
    /// Where the tree came from, for error messages and reports
    /// (`path` or `path:line`).
    pub source: String,
    /// Recorded arrival of the tree, from the workload's epoch.
    pub arrival: Nanos,
    /// `agents[0]` is the root. A child's `parent` always points to an
    /// earlier agent.
    pub agents: Vec<Agent>,
    /// Edges stated by the format itself. `None` means "derive them from the
    /// recorded times" (docs/model.md, "Edges").
    pub explicit_edges: Option<Vec<Edge>>,
    /// Model names used by turns of this tree; `Turn::model` indexes it.
    pub models: Vec<String>,
    /// Tokens per hash block, when the format has hash ids.
    pub block_size: u32,
    /// Whether equal hash ids in different trees mean equal content.
    pub hash_scope: HashScope,
    /// Tokens of tool definitions and system prompt at the start of the
    /// root agent's prompt, when the format records them.
    pub tool_tokens: u32,
    pub system_tokens: u32,
    /// What the reader inferred rather than read: parent links and turn
    /// times. Empty when the file stated everything.
    pub provenance: Provenance,
    /// The request fields besides the messages that turns of this tree
    /// sent (tools, tool choice, ...), each distinct set once:
    /// `TurnText::shape` indexes it. A session sends the same tools on
    /// every turn, so they are held once per tree, not once per turn.
    pub shapes: Vec<RequestShape>,
}

/// How sure a tree's structure is: the parent links and turn times a
/// reader did not read from the file but inferred, took from a request
/// header, or reconstructed, each with the rule it followed (in words, for
/// `arbor inspect`). Agents and turns not listed were stated by the file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    /// Agents whose parent link was not stated by the file, with where it
    /// came from; in agent order.
    pub parents: Vec<ParentLink>,
    /// Turns whose start or duration was reconstructed, counted by rule.
    pub timing: Vec<Reconstructed>,
}

impl Provenance {
    pub fn is_empty(&self) -> bool {
        self.parents.is_empty() && self.timing.is_empty()
    }

    /// Records that agent `agent`'s parent came from `source`.
    pub fn parent(&mut self, agent: u32, source: LinkSource) {
        self.parents.push(ParentLink { agent, source });
    }

    /// Counts `turns` more turns whose timing was reconstructed by `rule`.
    pub fn reconstructed(&mut self, rule: &str, turns: u32) {
        if turns == 0 {
            return;
        }
        match self.timing.iter_mut().find(|r| &*r.rule == rule) {
            Some(r) => r.turns = r.turns.saturating_add(turns),
            None => self.timing.push(Reconstructed {
                rule: rule.into(),
                turns,
            }),
        }
    }
}

/// Where an agent's parent link came from, when not from the file's own
/// parent field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentLink {
    /// Index in `Tree::agents` (never 0, the root).
    pub agent: u32,
    pub source: LinkSource,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LinkSource {
    /// Inferred by a reader's rule, named in words (e.g. "timing
    /// containment": the child ran within a parent turn's tool wait).
    Inferred(Box<str>),
    /// Stated by a request header the recorder captured (its name, e.g.
    /// `x-claude-code-parent-agent-id`).
    Header(Box<str>),
}

/// Turns of a tree whose timing a reader reconstructed by one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconstructed {
    /// The rule, in words (e.g. "duration from the first and last timing
    /// event").
    pub rule: Box<str>,
    pub turns: u32,
}

impl Tree {
    /// The request shape a turn's text sent, if any.
    pub fn shape_of(&self, text: &TurnText) -> Option<&RequestShape> {
        text.shape.and_then(|i| self.shapes.get(i as usize))
    }

    /// The index of `shape` in `shapes`, added when new; `None` for an
    /// empty shape (nothing to send).
    pub fn intern_shape(&mut self, shape: RequestShape) -> Option<u32> {
        intern_shape(&mut self.shapes, shape)
    }

    pub fn turn_count(&self) -> usize {
        self.agents.iter().map(|a| a.turns.len()).sum()
    }

    /// Flat index of each agent's first turn: agents laid out in order,
    /// turns in order within an agent. `offsets[agents.len()]` is the total.
    pub fn turn_offsets(&self) -> Vec<u32> {
        let mut offsets = Vec::with_capacity(self.agents.len() + 1);
        let mut next = 0u32;
        for agent in &self.agents {
            offsets.push(next);
            next += agent.turns.len() as u32;
        }
        offsets.push(next);
        offsets
    }

    /// Recorded end of the tree: the latest end of any turn.
    pub fn recorded_span(&self) -> Nanos {
        self.agents
            .iter()
            .flat_map(|a| a.turns.iter())
            .map(Turn::end)
            .max()
            .unwrap_or(0)
    }
}

/// The scope of hash block ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum HashScope {
    /// Ids are per tree (Weka): different trees never share blocks.
    #[default]
    Local,
    /// Ids are global to the corpus (Mooncake).
    Global,
}

/// How a child agent relates to its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AgentKind {
    /// The tree's main conversation.
    Root,
    /// A subagent its parent waits for (joined back).
    Blocking,
    /// A subagent launched asynchronously: its parent never waits for it,
    /// but the tree is live until it finishes.
    Background,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Root => "root",
            AgentKind::Blocking => "blocking",
            AgentKind::Background => "background",
        }
    }
}

/// One conversation: an ordered list of turns.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub id: String,
    /// Index of the parent agent in `Tree::agents`; `None` for the root.
    pub parent: Option<u32>,
    pub kind: AgentKind,
    /// The agent's own recorded end (e.g. a subagent's spawn + duration),
    /// when the format records one. Joins use the later of this and the
    /// agent's last turn end.
    pub recorded_end: Option<Nanos>,
    /// Turns ordered by recorded start.
    pub turns: Vec<Turn>,
}

/// What the client added to the conversation before this turn; it decides
/// which gap transform applies to the gap before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum InputKind {
    /// A tool result: the gap before it is tool time.
    ToolResult,
    /// User text: the gap before it is think time.
    UserText,
    #[default]
    Unknown,
}

/// One LLM request as recorded.
/// The most input or output tokens one turn may have (16,777,216):
/// above any model's context, far below what would exhaust the client.
pub const MAX_TURN_TOKENS: u32 = 1 << 24;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// Recorded send time, from the tree's start.
    pub start: Nanos,
    /// Recorded service time (sent to last byte). `None` when unknown;
    /// treated as 0 for edge derivation and by the `recorded` model.
    pub duration: Option<Nanos>,
    /// Prompt tokens.
    pub isl: u32,
    /// Output tokens.
    pub osl: u32,
    /// Recorded time to first token, when known.
    pub ttft: Option<Nanos>,
    /// Index into `Tree::models`.
    pub model: Option<u16>,
    pub input_kind: InputKind,
    /// Prefix-hash block ids (empty when the format has none).
    pub hash_ids: BlockIds,
    /// Recorded message text, for formats that keep it (sent as recorded);
    /// `None` for hash-id formats, whose text is synthesized.
    pub text: Option<Box<TurnText>>,
    /// True when `isl`/`osl` were estimated (from text length) because the
    /// format records no token counts.
    pub tokens_estimated: bool,
}

/// Prefix-hash block ids, stored as runs of consecutive ids.
///
/// Recorders number blocks in order of first appearance, so a turn's ids are
/// a few long runs (`1..=900`, then the new blocks). Storing runs keeps a
/// corpus whose contexts grow to hundreds of thousands of tokens in memory
/// proportional to its turns, not to the square of its contexts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockIds {
    /// `(first id, count)` of each run, in order.
    runs: Box<[(u32, u32)]>,
    len: u32,
}

impl BlockIds {
    /// Number of ids.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ids in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs
            .iter()
            .flat_map(|&(first, count)| (0..count).map(move |i| first.wrapping_add(i)))
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// The runs, `(first id, count)`.
    pub fn runs(&self) -> &[(u32, u32)] {
        &self.runs
    }

    /// True when `prefix`'s ids are the first ids of `self`.
    pub fn starts_with(&self, prefix: &BlockIds) -> bool {
        prefix.len <= self.len && self.iter().zip(prefix.iter()).all(|(a, b)| a == b)
    }
}

/// Builds [`BlockIds`] one id at a time.
#[derive(Debug, Default)]
pub struct BlockIdsBuilder {
    runs: Vec<(u32, u32)>,
    len: u32,
}

impl BlockIdsBuilder {
    pub fn push(&mut self, id: u32) {
        match self.runs.last_mut() {
            Some((first, count)) if first.checked_add(*count) == Some(id) && *count < u32::MAX => {
                *count += 1
            }
            _ => self.runs.push((id, 1)),
        }
        self.len = self.len.saturating_add(1);
    }

    /// Pushes the `count` consecutive ids `first, first + 1, ...`: the
    /// same ids as `count` calls of [`push`](Self::push), in one step.
    pub fn push_run(&mut self, first: u32, count: u32) {
        if count == 0 {
            return;
        }
        match self.runs.last_mut() {
            Some((start, n))
                if start.checked_add(*n) == Some(first) && n.checked_add(count).is_some() =>
            {
                *n += count
            }
            _ => self.runs.push((first, count)),
        }
        self.len = self.len.saturating_add(count);
    }

    pub fn finish(self) -> BlockIds {
        BlockIds {
            runs: self.runs.into_boxed_slice(),
            len: self.len,
        }
    }
}

impl FromIterator<u32> for BlockIds {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut builder = BlockIdsBuilder::default();
        for id in iter {
            builder.push(id);
        }
        builder.finish()
    }
}

impl From<&[u32]> for BlockIds {
    fn from(ids: &[u32]) -> Self {
        ids.iter().copied().collect()
    }
}

impl From<Vec<u32>> for BlockIds {
    fn from(ids: Vec<u32>) -> Self {
        ids.into_iter().collect()
    }
}

/// The recorded messages of a turn, stored as a delta so long sessions do
/// not hold their growing context once per turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnText {
    /// When true the prompt is the previous turn's prompt (same agent),
    /// then that turn's `response` (with its `response_calls`) as an
    /// assistant message, then `messages`. When false, `messages` is the
    /// whole prompt.
    pub extends_previous: bool,
    pub messages: Vec<Message>,
    /// The recorded answer's text, if any.
    pub response: Option<String>,
    /// The tool calls the recorded answer made, in order.
    pub response_calls: Vec<ToolCall>,
    /// The request fields besides the messages this turn sent: an index
    /// into `Tree::shapes`; `None` when it sent none (no tools).
    pub shape: Option<u32>,
}

/// One chat message, in a neutral form that is sent as an OpenAI chat
/// message or an Anthropic Messages one (docs/model.md, "Request shape").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    /// The text (text parts joined by newlines).
    pub content: String,
    /// The calls an assistant message made, or the call a tool message
    /// answers; `None` for plain text.
    pub tool: Option<Box<ToolPart>>,
}

impl Message {
    /// A message of plain text.
    pub fn text(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool: None,
        }
    }

    /// The tool calls of an assistant message (empty for others).
    pub fn calls(&self) -> &[ToolCall] {
        match self.tool.as_deref() {
            Some(ToolPart::Calls(calls)) => calls,
            _ => &[],
        }
    }

    /// The call a tool message answers.
    pub fn result(&self) -> Option<&ToolResult> {
        match self.tool.as_deref() {
            Some(ToolPart::Result(result)) => Some(result),
            _ => None,
        }
    }
}

/// What a message says of tools besides its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPart {
    /// An assistant's tool calls (OpenAI `tool_calls`, Anthropic
    /// `tool_use` blocks), in order.
    Calls(Vec<ToolCall>),
    /// A tool message's answer to a call (OpenAI `role: tool` with
    /// `tool_call_id`, an Anthropic `tool_result` block).
    Result(ToolResult),
}

/// One tool call an assistant made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id as recorded (`call_...`, `toolu_...`).
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments as the recorded JSON text (OpenAI's `arguments`
    /// string, or an Anthropic `input` object's text).
    pub arguments: String,
}

/// The call a tool message answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The answered call's id (`tool_call_id`, `tool_use_id`).
    pub call_id: String,
    /// The tool's name, where the message recorded one (OpenAI's `name`).
    pub name: Option<String>,
}

/// Which API's body a request shape was recorded in: its fields are sent
/// as recorded to the same API and converted for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ShapeApi {
    /// OpenAI chat completions.
    #[default]
    Chat,
    /// Anthropic Messages.
    Messages,
}

impl ShapeApi {
    pub fn as_str(self) -> &'static str {
        match self {
            ShapeApi::Chat => "chat",
            ShapeApi::Messages => "messages",
        }
    }
}

/// The fields of a recorded request that a chat template renders besides
/// its messages: the tool definitions and how the model may use them, and
/// a few other fields, each kept as the recorded JSON text
/// (docs/model.md, "Request shape").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestShape {
    /// The API whose body these were recorded in.
    pub api: ShapeApi,
    /// The recorded `tools` array, as JSON text.
    pub tools: Option<Box<str>>,
    /// The same tools, neutral: what is counted, and what is sent to the
    /// other API.
    pub tool_defs: Vec<ToolDef>,
    /// The recorded `tool_choice`, as JSON text.
    pub tool_choice: Option<Box<str>>,
    /// Other recorded fields (`parallel_tool_calls`, `response_format`,
    /// `chat_template_kwargs`), name and JSON text, in recorded order.
    pub fields: Vec<(Box<str>, Box<str>)>,
}

impl RequestShape {
    /// True when it holds nothing to send.
    pub fn is_empty(&self) -> bool {
        self.tools.is_none() && self.tool_choice.is_none() && self.fields.is_empty()
    }
}

/// The index of `shape` in `shapes`, added when new; `None` for an empty
/// shape. (Readers that build a tree's shapes before the tree use it.)
pub fn intern_shape(shapes: &mut Vec<RequestShape>, shape: RequestShape) -> Option<u32> {
    if shape.is_empty() {
        return None;
    }
    let at = match shapes.iter().position(|s| *s == shape) {
        Some(at) => at,
        None => {
            shapes.push(shape);
            shapes.len() - 1
        }
    };
    u32::try_from(at).ok()
}

/// One tool definition, neutral.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolDef {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of its input as the recorded JSON text (OpenAI's
    /// `function.parameters`, Anthropic's `input_schema`); `None` when
    /// the definition had none.
    pub schema: Option<Box<str>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses a recorded role name (`developer` counts as system).
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "system" | "developer" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" | "function" => Some(Role::Tool),
            _ => None,
        }
    }
}

impl Turn {
    /// Recorded end; an unknown duration counts as 0.
    pub fn end(&self) -> Nanos {
        self.start + self.duration.unwrap_or(0)
    }
}

/// When an edge's clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Anchor {
    /// When the source turn completed (last byte received).
    End,
    /// When the source turn was sent.
    Start,
}

/// Why an edge exists; decides nothing in the scheduler but is reported and
/// tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Between turns of one agent.
    Sequence,
    /// From a parent turn to a child agent's first turn.
    Spawn,
    /// From a child's last-ending turn to the parent turn that waits for it.
    Join,
}

/// `to` may not be sent before `anchor(from) + gap`. Turn ids are flat
/// indices in the tree (see [`Tree::turn_offsets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub anchor: Anchor,
    pub gap: Nanos,
    pub kind: EdgeKind,
}

#[cfg(test)]
mod block_ids_tests {
    use super::*;

    #[test]
    fn a_pushed_run_equals_its_ids_pushed_one_by_one() {
        let pieces: [(u32, u32); 5] = [(0, 3), (3, 2), (9, 0), (10, 4), (u32::MAX, 1)];
        let mut by_run = BlockIdsBuilder::default();
        let mut by_id = BlockIdsBuilder::default();
        for (first, count) in pieces {
            by_run.push_run(first, count);
            for i in 0..count {
                by_id.push(first + i);
            }
        }
        let (by_run, by_id) = (by_run.finish(), by_id.finish());
        assert_eq!(by_run, by_id);
        assert_eq!(by_run.runs(), &[(0, 5), (10, 4), (u32::MAX, 1)]);
        assert_eq!(by_run.len(), 10);
    }
}
