//! Which agent sent a request, as the agent's own headers say: the
//! identity headers of the clients `arbor record` knows (docs/record.md,
//! "Agent identity headers", where each is sourced).
//!
//! Owns [`CLIENTS`] (each client's session, agent and parent-agent
//! headers, in the order they are tried) and [`identity`] (a request's
//! headers to the capture line's [`Identity`]). The first client with any
//! of its headers present is the one read, and only its headers: a
//! request never mixes two clients' ids. No other header is read, and no
//! header value but these ids reaches the capture. Knows no I/O.

use arbor_formats::capture::{Identity, Stated};
use hyper::header::HeaderMap;

/// One client's identity headers, each list in the order tried (a newer
/// spelling first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    pub name: &'static str,
    /// The agent session (the whole tree).
    pub session: &'static [&'static str],
    /// The agent (one conversation) within it.
    pub agent: &'static [&'static str],
    /// The agent that launched this one.
    pub parent: &'static [&'static str],
}

/// The clients whose identity headers are read, in this order.
///
/// - Claude Code: one session id per `claude` process, subagents
///   included; a subagent's requests add its agent id, and a nested
///   subagent's its parent's (a first-level subagent sends no parent: its
///   parent is the session's main agent, whose requests carry no agent
///   id).
/// - Codex CLI: `session-id` (the root thread's id, shared by the threads
///   it spawns), `thread-id` (this thread), `x-codex-parent-thread-id` (a
///   spawned thread's parent); older versions send `session_id` and
///   `conversation_id`, both the conversation's id.
/// - Dynamo's agent headers: a session is one agent's conversation, the
///   parent session the agent that launched it (no tree-wide id).
/// - OpenCode (to its own providers): `x-opencode-session`, the OpenCode
///   session, which is one agent (a subagent runs in a child session with
///   its own id; no parent header).
pub const CLIENTS: [Client; 4] = [
    Client {
        name: "Claude Code",
        session: &["x-claude-code-session-id"],
        agent: &["x-claude-code-agent-id"],
        parent: &["x-claude-code-parent-agent-id"],
    },
    Client {
        name: "Codex",
        session: &["session-id", "session_id"],
        agent: &["thread-id", "conversation_id"],
        parent: &["x-codex-parent-thread-id"],
    },
    Client {
        name: "Dynamo",
        session: &[],
        agent: &["x-dynamo-session-id"],
        parent: &["x-dynamo-parent-session-id"],
    },
    Client {
        name: "OpenCode",
        session: &[],
        agent: &["x-opencode-session"],
        parent: &[],
    },
];

/// The first of `names` that `headers` carries with a value that is not
/// blank (and is text), trimmed.
fn first(headers: &HeaderMap, names: &[&'static str]) -> Option<Stated> {
    names.iter().find_map(|&name| {
        let value = headers.get(name)?.to_str().ok()?.trim();
        (!value.is_empty()).then(|| Stated::new(value, name))
    })
}

/// What the request's identity headers say: those of the first client in
/// [`CLIENTS`] that sent any.
pub fn identity(headers: &HeaderMap) -> Identity {
    for client in &CLIENTS {
        let found = Identity {
            session: first(headers, client.session),
            agent: first(headers, client.agent),
            parent_agent: first(headers, client.parent),
        };
        if !found.is_empty() {
            return found;
        }
    }
    Identity::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for &(name, value) in pairs {
            h.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        h
    }

    fn pair(s: &Option<Stated>) -> Option<(&str, &str)> {
        s.as_ref().map(|s| (s.id.as_str(), s.header.as_str()))
    }

    fn ids(i: &Identity) -> [Option<(&str, &str)>; 3] {
        [pair(&i.session), pair(&i.agent), pair(&i.parent_agent)]
    }

    #[test]
    fn each_client_s_headers_give_its_ids() {
        let claude = identity(&headers(&[
            ("x-claude-code-session-id", "s-1"),
            ("x-claude-code-agent-id", " a-2 "),
            ("x-claude-code-parent-agent-id", "a-1"),
            ("authorization", "Bearer sk-secret"),
        ]));
        assert_eq!(
            ids(&claude),
            [
                Some(("s-1", "x-claude-code-session-id")),
                Some(("a-2", "x-claude-code-agent-id")),
                Some(("a-1", "x-claude-code-parent-agent-id")),
            ]
        );
        let codex = identity(&headers(&[
            ("session-id", "root"),
            ("session_id", "old"),
            ("thread-id", "child"),
            ("x-codex-parent-thread-id", "root"),
        ]));
        assert_eq!(
            ids(&codex),
            [
                Some(("root", "session-id")),
                Some(("child", "thread-id")),
                Some(("root", "x-codex-parent-thread-id")),
            ]
        );
        let old_codex = identity(&headers(&[("session_id", "c"), ("conversation_id", "c")]));
        assert_eq!(
            ids(&old_codex),
            [
                Some(("c", "session_id")),
                Some(("c", "conversation_id")),
                None
            ]
        );
        let dynamo = identity(&headers(&[
            ("x-dynamo-session-id", "sub"),
            ("x-dynamo-parent-session-id", "main"),
        ]));
        assert_eq!(
            ids(&dynamo),
            [
                None,
                Some(("sub", "x-dynamo-session-id")),
                Some(("main", "x-dynamo-parent-session-id")),
            ]
        );
        let opencode = identity(&headers(&[("x-opencode-session", "ses_1")]));
        assert_eq!(
            ids(&opencode),
            [None, Some(("ses_1", "x-opencode-session")), None]
        );
    }

    #[test]
    fn the_first_client_wins_whole_and_blank_or_other_headers_are_nothing() {
        // A Claude Code request through a gateway that stamps Dynamo's
        // headers: only Claude Code's are read.
        let both = identity(&headers(&[
            ("x-claude-code-session-id", "s"),
            ("x-dynamo-session-id", "d"),
            ("x-dynamo-parent-session-id", "p"),
        ]));
        assert_eq!(
            ids(&both),
            [Some(("s", "x-claude-code-session-id")), None, None]
        );
        let blank = identity(&headers(&[
            ("x-claude-code-session-id", "  "),
            ("x-session-id", "generic"),
            ("x-api-key", "sk-1"),
        ]));
        assert!(blank.is_empty());
    }
}
