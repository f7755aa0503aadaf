//! Sessions, agents and parents a line's `identity` states: what the
//! agent's own request headers said, as `arbor record` captured them
//! (docs/formats/openai-log.md, "Identity headers").
//!
//! Owns [`RawIdentity`] (the field as read) and [`place`], which runs
//! before inference (`infer.rs`) and decides, for every line that states
//! no `agent_id` of its own, by these rules:
//!
//! - **tree**: the line's `session_id`, else its identity's session; a
//!   line with neither whose identity names an agent (Dynamo's and
//!   OpenCode's headers, which name no session) is in the tree of its
//!   agent's root: its header parents followed up to the agent that names
//!   none;
//! - **agent**: the identity's agent; in a session whose lines include
//!   any header agent (the client tags its subagents), a line without one
//!   is the session's **main agent**, named by the session id (Claude
//!   Code's main agent sends no agent id; Codex's root thread's id is the
//!   session id). In a session with no header agent (a client that sends
//!   only a session id), lines without one are left to inference;
//! - **parent**: the identity's parent agent; a header agent with none, in
//!   a header session, is a child of the session's main agent (Claude
//!   Code's first-level subagents send no parent id); a parent id equal
//!   to the session id is the main agent.
//!
//! Every parent placed here carries [`LinkSource::Header`] with the
//! header it came from (the parent header, or for a child of the main
//! agent the agent header that made it a subagent), so `inspect` says so.
//! A header parent that has no lines of its own, or a cycle of header
//! parents, is refused, naming the line and `$.identity.parent_agent`.
//! Reads and rewrites only [`Placed`]; no I/O.

use std::collections::{BTreeMap, BTreeSet};

use arbor_engine::error::InputError;
use arbor_engine::model::LinkSource;
use serde::Deserialize;

use super::super::fields::NonEmpty;
use super::{Placed, DEFAULT_SESSION};

/// A line's `identity`: `session`, `agent` and `parent_agent`, each an
/// id and the header that stated it.
#[derive(Deserialize)]
#[serde(expecting = "an identity object (`session`, `agent`, `parent_agent`)")]
pub(super) struct RawIdentity {
    #[serde(default)]
    session: Option<RawStated>,
    #[serde(default)]
    agent: Option<RawStated>,
    #[serde(default)]
    parent_agent: Option<RawStated>,
}

#[derive(Deserialize)]
#[serde(expecting = "a stated id (`id` and `header`)")]
struct RawStated {
    id: NonEmpty,
    header: NonEmpty,
}

/// One id a header stated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stated {
    pub id: String,
    pub header: String,
}

/// What a line's identity headers said (for a line that states no
/// `agent_id` itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Told {
    pub session: Option<Stated>,
    pub agent: Option<Stated>,
    pub parent: Option<Stated>,
}

impl RawIdentity {
    pub(super) fn into_told(self) -> Told {
        let stated = |s: Option<RawStated>| {
            s.map(|s| Stated {
                id: s.id.0,
                header: s.header.0,
            })
        };
        Told {
            session: stated(self.session),
            agent: stated(self.agent),
            parent: stated(self.parent_agent),
        }
    }
}

/// What was placed by headers, for `inspect`'s conventions.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct FromHeaders {
    /// Lines whose agent the headers gave (a header agent, or a session's
    /// main agent).
    pub lines: usize,
    /// Agents whose parent came from a header.
    pub parents: usize,
}

/// Places every line that has an identity and states no `agent_id`:
/// its tree, agent and parent (see the module doc).
pub(super) fn place(read: &mut [Placed], file: &str) -> Result<FromHeaders, InputError> {
    let mut out = FromHeaders::default();
    // Header sessions whose client tags its subagents.
    let tagged: BTreeSet<String> = read
        .iter()
        .filter_map(|p| p.told.as_ref())
        .filter(|t| t.agent.is_some())
        .filter_map(|t| t.session.as_ref().map(|s| s.id.clone()))
        .collect();
    let mut parented: BTreeSet<(String, String)> = BTreeSet::new();
    for p in read.iter_mut() {
        let Some(told) = p.told.clone() else { continue };
        let main = told.session.as_ref().filter(|s| tagged.contains(&s.id));
        match (&told.agent, main) {
            (Some(agent), _) => p.agent = agent.id.clone(),
            (None, Some(session)) => p.agent = session.id.clone(),
            (None, None) => continue,
        }
        p.inferred = false;
        out.lines += 1;
        let Some(agent) = &told.agent else { continue };
        let parent = match (&told.parent, &told.session) {
            (Some(parent), _) => Some((parent.id.clone(), parent.header.clone())),
            (None, Some(session)) if session.id != agent.id => {
                Some((session.id.clone(), agent.header.clone()))
            }
            (None, _) => None,
        };
        if let Some((id, header)) = parent {
            p.entry.parent = Some(id);
            p.entry.parent_source = Some(LinkSource::Header(header.into()));
            if parented.insert((p.session.clone(), p.agent.clone())) {
                out.parents += 1;
            }
        }
    }
    root_sessions(read, file)?;
    Ok(out)
}

/// Lines in no session (neither `session_id` nor a header session) whose
/// agent a header named: each goes to the tree of its agent's root, named
/// by the root agent's id.
fn root_sessions(read: &mut [Placed], file: &str) -> Result<(), InputError> {
    let sessionless =
        |p: &Placed| !p.session_given && p.told.as_ref().is_some_and(|t| t.agent.is_some());
    // Each such agent's parent (the first line's) and where it was said.
    let mut parent_of: BTreeMap<String, (Option<String>, usize)> = BTreeMap::new();
    for p in read.iter().filter(|p| sessionless(p)) {
        parent_of
            .entry(p.agent.clone())
            .or_insert((p.entry.parent.clone(), p.entry.line));
    }
    let mut root_of: BTreeMap<String, String> = BTreeMap::new();
    for start in parent_of.keys() {
        let mut seen: Vec<&str> = vec![start];
        let mut at = start.as_str();
        while let Some((Some(parent), line)) = parent_of.get(at) {
            if !parent_of.contains_key(parent) {
                return Err(InputError::at(
                    file,
                    format!("line {line}, $.identity.parent_agent"),
                    format!(
                        "parent agent `{parent}` of agent `{at}` has no requests in the \
                         capture: expected the requests of every agent a header names as a \
                         parent"
                    ),
                ));
            }
            if seen.contains(&parent.as_str()) {
                return Err(InputError::at(
                    file,
                    format!("line {line}, $.identity.parent_agent"),
                    format!(
                        "agent `{at}` names `{parent}` as its parent, which descends from \
                         it (a cycle): expected every agent to descend from one root"
                    ),
                ));
            }
            seen.push(parent);
            at = parent;
        }
        root_of.insert(start.clone(), at.to_string());
    }
    for p in read.iter_mut().filter(|p| sessionless(p)) {
        p.session = root_of
            .get(&p.agent)
            .cloned()
            .unwrap_or_else(|| DEFAULT_SESSION.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::super::test_support::{assert_contains, scratch_file};
    use super::super::load;
    use crate::input::Loaded;
    use arbor_engine::error::InputError;
    use arbor_engine::model::{AgentKind, LinkSource, ParentLink, Tree};
    use serde_json::{json, Value};

    const S: u64 = 1_800_000_000_000_000_000;

    /// A captured line at `start_ms` (ending 100 ms later) of a one-message
    /// conversation `text`, with the identity `identity`.
    fn line(start_ms: u64, text: &str, identity: Value) -> String {
        json!({
            "start": (S + start_ms * 1_000_000) as f64 / 1e9,
            "start_ns": S + start_ms * 1_000_000,
            "end_ns": S + (start_ms + 100) * 1_000_000,
            "infer": true,
            "identity": identity,
            "request": {"messages": [{"role": "user", "content": text}]},
            "response": {"content": "ok", "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        })
        .to_string()
    }

    fn stated(id: &str, header: &str) -> Value {
        json!({"id": id, "header": header})
    }

    fn load_lines(lines: &[String]) -> Result<Loaded, InputError> {
        let path = scratch_file("identity", lines.join("\n").as_bytes());
        let loaded = load(&path);
        std::fs::remove_file(&path).ok();
        loaded
    }

    /// (agent id, parent id, kind, turns) of every agent.
    fn shape(tree: &Tree) -> Vec<(String, Option<String>, AgentKind, usize)> {
        tree.agents
            .iter()
            .map(|a| {
                let parent = a.parent.map(|p| tree.agents[p as usize].id.clone());
                (a.id.clone(), parent, a.kind, a.turns.len())
            })
            .collect()
    }

    fn header(agent: u32, name: &str) -> ParentLink {
        ParentLink {
            agent,
            source: LinkSource::Header(name.into()),
        }
    }

    const CC_SESSION: &str = "x-claude-code-session-id";
    const CC_AGENT: &str = "x-claude-code-agent-id";
    const CC_PARENT: &str = "x-claude-code-parent-agent-id";

    /// Claude Code: the main agent sends only the session; a first-level
    /// subagent its agent id; a nested one its parent's too. Turns of one
    /// agent need not continue each other: the headers group them.
    #[test]
    fn claude_code_headers_give_the_tree_and_say_so() {
        let session = json!({"session": stated("cc-1", CC_SESSION)});
        let agent = |id: &str| json!({"session": stated("cc-1", CC_SESSION), "agent": stated(id, CC_AGENT)});
        let nested = json!({
            "session": stated("cc-1", CC_SESSION),
            "agent": stated("grand", CC_AGENT),
            "parent_agent": stated("explore", CC_PARENT),
        });
        let loaded = load_lines(&[
            line(0, "fix it", session.clone()),
            line(1000, "find files", agent("explore")),
            line(1050, "review", agent("review")),
            line(1200, "look deeper", nested),
            line(1300, "unrelated text", agent("explore")),
            line(2000, "compacted context", session),
        ])
        .expect("loads");
        assert_eq!(loaded.trees.len(), 1);
        let tree = &loaded.trees[0];
        assert_eq!(tree.id, "cc-1");
        let s = |x: &str| x.to_string();
        assert_eq!(
            shape(tree),
            [
                (s("cc-1"), None, AgentKind::Root, 2),
                (s("explore"), Some(s("cc-1")), AgentKind::Blocking, 2),
                (s("review"), Some(s("cc-1")), AgentKind::Blocking, 1),
                (s("grand"), Some(s("explore")), AgentKind::Blocking, 1),
            ]
        );
        assert_eq!(
            tree.provenance.parents,
            [
                header(1, CC_AGENT),
                header(2, CC_AGENT),
                header(3, CC_PARENT)
            ]
        );
        assert!(tree.provenance.timing.is_empty());
    }

    /// Dynamo names no tree: a session is an agent, the tree is its
    /// root's. Two roots, two trees, each named by its root.
    #[test]
    fn dynamo_headers_root_each_tree_at_the_session_without_a_parent() {
        let dyn_agent = |id: &str, parent: Option<&str>| {
            let mut v = json!({"agent": stated(id, "x-dynamo-session-id")});
            if let Some(p) = parent {
                v["parent_agent"] = stated(p, "x-dynamo-parent-session-id");
            }
            v
        };
        let loaded = load_lines(&[
            line(0, "a", dyn_agent("root-1", None)),
            line(500, "b", dyn_agent("kid-1", Some("root-1"))),
            line(600, "c", dyn_agent("kid-2", Some("root-1"))),
            line(700, "d", dyn_agent("grandkid", Some("kid-2"))),
            line(5000, "e", dyn_agent("root-2", None)),
        ])
        .expect("loads");
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["root-1", "root-2"]);
        let s = |x: &str| x.to_string();
        assert_eq!(
            shape(&loaded.trees[0]),
            [
                (s("root-1"), None, AgentKind::Root, 1),
                (s("kid-1"), Some(s("root-1")), AgentKind::Blocking, 1),
                (s("kid-2"), Some(s("root-1")), AgentKind::Blocking, 1),
                (s("grandkid"), Some(s("kid-2")), AgentKind::Blocking, 1),
            ]
        );
        let parent = "x-dynamo-parent-session-id";
        assert_eq!(
            loaded.trees[0].provenance.parents,
            [header(1, parent), header(2, parent), header(3, parent)]
        );
        assert!(loaded.trees[1].provenance.is_empty());
    }

    /// A client that sends only a session id (no agent ids): its lines are
    /// inferred within the session, and the parents say so; a stated
    /// `agent_id` wins over any header.
    #[test]
    fn a_session_without_agent_headers_is_inferred_and_the_file_s_own_ids_win() {
        let session = json!({"session": stated("old", CC_SESSION)});
        let mut lines = vec![
            line(0, "root", session.clone()),
            line(5000, "other conversation", session),
        ];
        let mut own: Value = serde_json::from_str(&line(
            100,
            "x",
            json!({"agent": stated("ignored", CC_AGENT)}),
        ))
        .expect("json");
        own["session_id"] = json!("mine");
        own["agent_id"] = json!("a");
        lines.push(own.to_string());
        let loaded = load_lines(&lines).expect("loads");
        let trees: Vec<(&str, &str)> = loaded
            .trees
            .iter()
            .map(|t| (t.id.as_str(), t.agents[0].id.as_str()))
            .collect();
        // Two conversations that do not continue each other: two trees
        // by inference, as before identity headers.
        assert_eq!(
            trees,
            [("old", "conv-1"), ("mine", "a"), ("old.2", "conv-2")]
        );
    }

    /// A capture mixing a client with identity headers and one without:
    /// the first's tree from its headers, the other's inferred, each
    /// parent marked with where it came from.
    #[test]
    fn a_mixed_capture_keeps_header_and_inferred_trees_apart() {
        let dynamo = |id: &str, parent: Option<&str>| {
            let mut v = json!({"agent": stated(id, "x-dynamo-session-id")});
            if let Some(p) = parent {
                v["parent_agent"] = stated(p, "x-dynamo-parent-session-id");
            }
            v
        };
        let bare = |start_ms: u64, messages: Value, answer: &str| {
            let mut v: Value =
                serde_json::from_str(&line(start_ms, "x", Value::Null)).expect("json");
            v.as_object_mut().map(|o| o.remove("identity"));
            v["request"]["messages"] = messages;
            v["response"]["content"] = json!(answer);
            v.to_string()
        };
        let m = |role: &str, content: &str| json!({"role": role, "content": content});
        let loaded = load_lines(&[
            line(0, "a", dynamo("root", None)),
            line(50, "b", dynamo("kid", Some("root"))),
            bare(100, json!([m("user", "U")]), "A1"),
            bare(
                400,
                json!([m("user", "U"), m("assistant", "A1"), m("tool", "T")]),
                "A2",
            ),
            // Starts while the conversation above waits on its tool.
            bare(300, json!([m("user", "side")]), "S1"),
        ])
        .expect("loads");
        type Agents<'a> = Vec<(&'a str, Option<&'a LinkSource>)>;
        let trees: Vec<(&str, Agents)> = loaded
            .trees
            .iter()
            .map(|t| {
                let agents = t
                    .agents
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let source = t
                            .provenance
                            .parents
                            .iter()
                            .find(|l| l.agent as usize == i)
                            .map(|l| &l.source);
                        (a.id.as_str(), source)
                    })
                    .collect();
                (t.id.as_str(), agents)
            })
            .collect();
        let header = LinkSource::Header("x-dynamo-parent-session-id".into());
        let inferred = LinkSource::Inferred("tool wait".into());
        assert_eq!(
            trees,
            [
                ("root", vec![("root", None), ("kid", Some(&header))]),
                (
                    "default",
                    vec![("conv-1", None), ("conv-2", Some(&inferred))]
                ),
            ]
        );
    }

    #[test]
    fn a_missing_header_parent_or_a_cycle_is_refused_at_its_line() {
        let dyn_agent = |id: &str, parent: &str| {
            json!({
                "agent": stated(id, "x-dynamo-session-id"),
                "parent_agent": stated(parent, "x-dynamo-parent-session-id"),
            })
        };
        let msg = load_lines(&[line(0, "a", dyn_agent("kid", "gone"))])
            .expect_err("refused")
            .to_string();
        assert_contains(
            &msg,
            &[
                "line 1, $.identity.parent_agent",
                "parent agent `gone` of agent `kid` has no requests",
            ],
        );
        let msg = load_lines(&[
            line(0, "a", dyn_agent("x", "y")),
            line(10, "b", dyn_agent("y", "x")),
        ])
        .expect_err("refused")
        .to_string();
        assert_contains(&msg, &["$.identity.parent_agent", "a cycle"]);
        let msg = load_lines(&[line(0, "a", json!({"agent": {"id": "", "header": "h"}}))])
            .expect_err("refused")
            .to_string();
        assert_contains(&msg, &["$.identity.agent.id", "a non-empty string"]);
    }
}
