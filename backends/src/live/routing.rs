//! Session routing: how each request tells a router which conversation it
//! belongs to (`--session-routing`, docs/routing.md).
//!
//! Owns the conventions ([`SessionRouting`]: AIPerf's `X-Session-Affinity`,
//! Dynamo's session headers, a server-issued token echoed back, the body's
//! `user` field, a header of one's own, SGLang's model gateway routing key,
//! none), their textual forms, one request's [`Session`] (its agent's key,
//! its parent agent's key, whether it is the agent's last turn, the token
//! to echo), and writing them: into a request head ([`write_headers`], no
//! allocation of its own) or into a body ([`user_field`]).
//!
//! A key names one agent of one play: `arbor-{play}-{agent}`
//! ([`agent_key`]), `play` the run's play number (the records' `play`) and
//! `agent` the agent's index in its tree; a subagent's parent key is the
//! same form with its parent agent's index.
//!
//! Must not: know about endpoints or placement (`placement`), nor read a
//! response (the exchange hands back the token a response carried).

use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::Arc;

/// The header AIPerf 0.14 sends by default.
pub const AFFINITY_HEADER: &str = "X-Session-Affinity";
/// Dynamo's session of a request (docs.nvidia.com/dynamo, "Session IDs").
pub const DYNAMO_SESSION_HEADER: &str = "X-Dynamo-Session-ID";
/// Dynamo's parent session of a subagent's request.
pub const DYNAMO_PARENT_HEADER: &str = "X-Dynamo-Parent-Session-ID";
/// Dynamo's mark of a session's last request.
pub const DYNAMO_FINAL_HEADER: &str = "X-Dynamo-Session-Final";
/// SGLang model gateway's routing key (its `manual` policy).
pub const SGLANG_HEADER: &str = "X-SMG-Routing-Key";
/// The default header of `token`: llm-d style, issued by the server.
pub const DEFAULT_TOKEN_HEADER: &str = "x-session-token";

/// How requests say which conversation they belong to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionRouting {
    /// `X-Session-Affinity: KEY` (the default: harmless to a server that
    /// ignores it).
    #[default]
    Affinity,
    /// `X-Dynamo-Session-ID: KEY`, `X-Dynamo-Parent-Session-ID:
    /// PARENT_KEY` for a subagent, `X-Dynamo-Session-Final: true` on an
    /// agent's last turn.
    Dynamo,
    /// Echo the value of this response header, from the agent's latest
    /// response, on the agent's later requests (nothing on its first).
    Token { header: Arc<str> },
    /// The body's `user` field (Messages API: `metadata.user_id`).
    User,
    /// `NAME: KEY`.
    Header { name: Arc<str> },
    /// `X-SMG-Routing-Key: KEY`.
    Sglang,
    /// Nothing.
    None,
}

impl SessionRouting {
    /// The textual form (`affinity`, `token:x-session-token`, ...), as
    /// the flag takes it and the run config records it.
    pub fn name(&self) -> String {
        match self {
            SessionRouting::Affinity => "affinity".into(),
            SessionRouting::Dynamo => "dynamo".into(),
            SessionRouting::Token { header } => format!("token:{header}"),
            SessionRouting::User => "user".into(),
            SessionRouting::Header { name } => format!("header:{name}"),
            SessionRouting::Sglang => "sglang".into(),
            SessionRouting::None => "none".into(),
        }
    }

    /// Whether requests carry a key (every mode but `none`; `token`
    /// records the agent's key though it sends the server's token).
    pub fn keyed(&self) -> bool {
        *self != SessionRouting::None
    }

    /// The response header whose value is echoed (`token`).
    pub fn token_header(&self) -> Option<&str> {
        match self {
            SessionRouting::Token { header } => Some(header),
            _ => None,
        }
    }

    /// Whether a request needs to know if it is its agent's last turn.
    pub fn needs_last(&self) -> bool {
        matches!(self, SessionRouting::Dynamo | SessionRouting::Token { .. })
    }
}

impl fmt::Display for SessionRouting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The modes, for messages.
pub const MODES: &str = "affinity, dynamo, token[:HEADER], user, header:NAME, sglang or none";

impl FromStr for SessionRouting {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (mode, arg) = match text.split_once(':') {
            Some((mode, arg)) => (mode, Some(arg)),
            None => (text, None),
        };
        let header = |arg: &str| -> Result<Arc<str>, String> {
            header_name(arg).map_err(|e| format!("`{text}`: {e}"))
        };
        let plain = |routing: SessionRouting| match arg {
            None => Ok(routing),
            Some(_) => Err(format!("`{text}`: `{mode}` takes no `:...`")),
        };
        match mode {
            "affinity" => plain(SessionRouting::Affinity),
            "dynamo" => plain(SessionRouting::Dynamo),
            "user" => plain(SessionRouting::User),
            "sglang" => plain(SessionRouting::Sglang),
            "none" => plain(SessionRouting::None),
            "token" => Ok(SessionRouting::Token {
                header: header(arg.unwrap_or(DEFAULT_TOKEN_HEADER))?,
            }),
            "header" => match arg {
                Some(name) => Ok(SessionRouting::Header {
                    name: header(name)?,
                }),
                None => Err(format!("`{text}`: give the header's name, header:NAME")),
            },
            _ => Err(format!("`{text}` is not a session-routing mode: {MODES}")),
        }
    }
}

/// `text` as a header name, or why it is not one.
pub fn header_name(text: &str) -> Result<Arc<str>, String> {
    if text.is_empty() || http::HeaderName::from_bytes(text.as_bytes()).is_err() {
        return Err(format!(
            "`{text}` is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)"
        ));
    }
    Ok(Arc::from(text))
}

/// The key of agent `agent` of play `play`.
pub fn agent_key(play: u32, agent: u32) -> String {
    format!("arbor-{play}-{agent}")
}

/// One request's session: what its head or body carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub play: u32,
    /// The agent's index in its tree.
    pub agent: u32,
    /// The parent agent's index, for a subagent.
    pub parent: Option<u32>,
    /// The agent's last turn.
    pub last: bool,
    /// The token to echo (`token`): the agent's latest response's.
    pub token: Option<String>,
}

impl Session {
    /// The agent's key ([`agent_key`]).
    pub fn key(&self) -> String {
        agent_key(self.play, self.agent)
    }
}

/// Writes the header lines (each ending in CRLF) `routing` sends for
/// `session` into `head`.
pub fn write_headers(head: &mut Vec<u8>, routing: &SessionRouting, session: &Session) {
    let (play, agent) = (session.play, session.agent);
    let _ = match routing {
        SessionRouting::Affinity => {
            write!(head, "{AFFINITY_HEADER}: arbor-{play}-{agent}\r\n")
        }
        SessionRouting::Dynamo => {
            let _ = write!(head, "{DYNAMO_SESSION_HEADER}: arbor-{play}-{agent}\r\n");
            if let Some(parent) = session.parent {
                let _ = write!(head, "{DYNAMO_PARENT_HEADER}: arbor-{play}-{parent}\r\n");
            }
            if session.last {
                let _ = write!(head, "{DYNAMO_FINAL_HEADER}: true\r\n");
            }
            Ok(())
        }
        SessionRouting::Token { header } => match &session.token {
            Some(token) => write!(head, "{header}: {token}\r\n"),
            None => Ok(()),
        },
        SessionRouting::Header { name } => write!(head, "{name}: arbor-{play}-{agent}\r\n"),
        SessionRouting::Sglang => write!(head, "{SGLANG_HEADER}: arbor-{play}-{agent}\r\n"),
        SessionRouting::User | SessionRouting::None => Ok(()),
    };
}

/// The body field `user` mode inserts first in a body: `"user":"KEY",`
/// (Messages API: `"metadata":{"user_id":"KEY"},`).
pub fn user_field(messages: bool, key: &str) -> String {
    if messages {
        format!(r#""metadata":{{"user_id":"{key}"}},"#)
    } else {
        format!(r#""user":"{key}","#)
    }
}

/// Inserts `field` (from [`user_field`]) as the first member of the JSON
/// object `body`; a body that is not a non-empty object is left alone.
pub fn insert_first(body: &mut Vec<u8>, field: &str) {
    if body.first() != Some(&b'{') || body.get(1).is_none_or(|b| *b == b'}') {
        return;
    }
    body.splice(1..1, field.bytes());
}

/// Whether `extra_body` sets the field `user` mode would (`user`, or
/// `metadata` for the Messages API): then the two disagree.
pub fn extra_body_sets_user(
    messages: bool,
    extra_body: Option<&serde_json::Map<String, serde_json::Value>>,
) -> bool {
    let field = if messages { "metadata" } else { "user" };
    extra_body.is_some_and(|b| b.contains_key(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_back() {
        for text in [
            "affinity",
            "dynamo",
            "token:x-session-token",
            "token:x-llm-d-token",
            "user",
            "header:x-conversation",
            "sglang",
            "none",
        ] {
            let mode: SessionRouting = text.parse().unwrap();
            assert_eq!(mode.name(), text);
        }
        assert_eq!(
            "token".parse::<SessionRouting>().unwrap().token_header(),
            Some(DEFAULT_TOKEN_HEADER)
        );
        for bad in [
            "sticky",
            "header",
            "header:",
            "header:a b",
            "token:",
            "dynamo:x",
        ] {
            let e = bad.parse::<SessionRouting>().unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
    }

    fn session(parent: Option<u32>, last: bool, token: Option<&str>) -> Session {
        Session {
            play: 7,
            agent: 2,
            parent,
            last,
            token: token.map(str::to_string),
        }
    }

    fn head(routing: &str, s: &Session) -> String {
        let mut head = Vec::new();
        write_headers(&mut head, &routing.parse().unwrap(), s);
        String::from_utf8(head).unwrap()
    }

    #[test]
    fn each_mode_writes_its_headers() {
        let sub = session(Some(0), true, None);
        assert_eq!(head("affinity", &sub), "X-Session-Affinity: arbor-7-2\r\n");
        assert_eq!(
            head("dynamo", &sub),
            "X-Dynamo-Session-ID: arbor-7-2\r\nX-Dynamo-Parent-Session-ID: arbor-7-0\r\n\
             X-Dynamo-Session-Final: true\r\n"
        );
        assert_eq!(
            head("dynamo", &session(None, false, None)),
            "X-Dynamo-Session-ID: arbor-7-2\r\n"
        );
        assert_eq!(head("token", &sub), "");
        assert_eq!(
            head("token", &session(None, false, Some("t1"))),
            "x-session-token: t1\r\n"
        );
        assert_eq!(head("header:x-conv", &sub), "x-conv: arbor-7-2\r\n");
        assert_eq!(head("sglang", &sub), "X-SMG-Routing-Key: arbor-7-2\r\n");
        assert_eq!(head("user", &sub), "");
        assert_eq!(head("none", &sub), "");
    }

    #[test]
    fn the_user_field_goes_first_in_the_body() {
        let mut body = br#"{"model":"m","stream":true}"#.to_vec();
        insert_first(&mut body, &user_field(false, "arbor-1-0"));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["user"], "arbor-1-0");
        assert_eq!(v["model"], "m");
        let mut body = br#"{"model":"m"}"#.to_vec();
        insert_first(&mut body, &user_field(true, "arbor-1-0"));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["metadata"]["user_id"], "arbor-1-0");
        let mut empty = b"{}".to_vec();
        insert_first(&mut empty, &user_field(false, "k"));
        assert_eq!(empty, b"{}");
    }
}
