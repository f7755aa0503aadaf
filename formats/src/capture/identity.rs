//! The `identity` of a capture line: what the agent's own request headers
//! said of who sent the request (docs/record.md, "Agent identity
//! headers").
//!
//! Owns [`Identity`] and [`Stated`]: the session (the tree), the agent and
//! the parent agent a client stated, each with the name of the header that
//! stated it, so the loader can say which header a parent link came from.
//! Which headers are read, and in what order, is the proxy's
//! (`arbor_backends::record`); reading the field back is the openai-log
//! loader's. Only these ids are written, never another header.

use serde::Serialize;

/// One id a request header stated, and that header's name (lowercase, as
/// HTTP/1.1 header names compare).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stated {
    pub id: String,
    pub header: String,
}

impl Stated {
    pub fn new(id: impl Into<String>, header: impl Into<String>) -> Stated {
        Stated {
            id: id.into(),
            header: header.into(),
        }
    }
}

/// Who a request says it comes from; every part optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The agent session the request belongs to: one tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Stated>,
    /// The agent (one conversation) within it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Stated>,
    /// The agent that launched this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent: Option<Stated>,
}

impl Identity {
    pub fn is_empty(&self) -> bool {
        self.session.is_none() && self.agent.is_none() && self.parent_agent.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_serializes_only_what_was_stated() {
        let identity = Identity {
            session: Some(Stated::new("s-1", "x-claude-code-session-id")),
            agent: Some(Stated::new("a-2", "x-claude-code-agent-id")),
            parent_agent: None,
        };
        assert_eq!(
            serde_json::to_value(&identity).expect("json"),
            serde_json::json!({
                "session": {"id": "s-1", "header": "x-claude-code-session-id"},
                "agent": {"id": "a-2", "header": "x-claude-code-agent-id"},
            })
        );
        assert!(Identity::default().is_empty() && !identity.is_empty());
    }
}
