//! The emulator's router mode: which replica of a fleet serves a
//! completion request, by one session-affinity convention
//! ([`RouteBy`]), as the routers in front of production replicas do.
//!
//! In a keyed mode a key seen for the first time is placed round-robin and
//! remembered; a request without a key goes round-robin. Remembered keys
//! are bounded ([`MAX_KEYS`]): two generations, the older dropped whole
//! when the younger fills, a key found in the older moved to the younger
//! (least recently used, roughly). Owns the decision only: `fleet.rs`
//! reads the request and hands it to the replica.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use arbor_engine::PolicyError;
use hyper::HeaderMap;

use super::received::{
    DYNAMO_FINAL_HEADER, DYNAMO_PARENT_HEADER, DYNAMO_SESSION_HEADER, SESSION_AFFINITY_HEADER,
    SESSION_TOKEN_HEADER,
};

/// Keys a router remembers at most.
pub const MAX_KEYS: usize = 1_000_000;

/// How the router picks a request's replica (`arbor emulate --router`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteBy {
    /// `X-Session-Affinity` (AIPerf's default).
    Affinity,
    /// `X-Dynamo-Session-ID`; an unknown session whose
    /// `X-Dynamo-Parent-Session-ID` is known goes to its parent's replica;
    /// `X-Dynamo-Session-Final: true` forgets the session after routing.
    Dynamo,
    /// llm-d's: a request without `x-session-token` is placed round-robin
    /// and its answer carries a token naming the replica; a request with
    /// one goes to the replica it names.
    Token,
    /// The body's `user` (chat, completions, Responses) or
    /// `metadata.user_id` (Messages).
    User,
    /// Any header, by its (lowercase) name.
    Header(String),
    /// No affinity: the baseline.
    RoundRobin,
}

impl RouteBy {
    /// Whether the decision needs the body (it is read before routing).
    pub fn reads_body(&self) -> bool {
        *self == RouteBy::User
    }
}

impl fmt::Display for RouteBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteBy::Affinity => f.write_str("affinity"),
            RouteBy::Dynamo => f.write_str("dynamo"),
            RouteBy::Token => f.write_str("token"),
            RouteBy::User => f.write_str("user"),
            RouteBy::Header(name) => write!(f, "header:{name}"),
            RouteBy::RoundRobin => f.write_str("round-robin"),
        }
    }
}

impl FromStr for RouteBy {
    type Err = PolicyError;

    fn from_str(text: &str) -> Result<Self, PolicyError> {
        let expected = || {
            PolicyError::new(format!(
                "expected affinity, dynamo, token, user, header:NAME or round-robin, got `{text}`"
            ))
        };
        Ok(match text.trim() {
            "affinity" => RouteBy::Affinity,
            "dynamo" => RouteBy::Dynamo,
            "token" => RouteBy::Token,
            "user" => RouteBy::User,
            "round-robin" => RouteBy::RoundRobin,
            other => {
                let name = other.strip_prefix("header:").ok_or_else(expected)?;
                if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(PolicyError::new(format!(
                        "expected a header name after `header:`, got `{text}`"
                    )));
                }
                RouteBy::Header(name.to_ascii_lowercase())
            }
        })
    }
}

/// Where a request goes, and the session token its answer carries
/// ([`RouteBy::Token`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Routed {
    pub replica: usize,
    pub token: Option<String>,
}

/// Keys to replicas, bounded (see the module doc).
#[derive(Debug)]
struct Remembered {
    /// Each generation holds at most this many keys.
    half: usize,
    young: HashMap<String, usize>,
    old: HashMap<String, usize>,
}

impl Remembered {
    fn new(cap: usize) -> Self {
        Remembered {
            half: (cap / 2).max(1),
            young: HashMap::new(),
            old: HashMap::new(),
        }
    }

    fn get(&mut self, key: &str) -> Option<usize> {
        if let Some(&r) = self.young.get(key) {
            return Some(r);
        }
        let r = self.old.remove(key)?;
        self.put(key, r);
        Some(r)
    }

    fn put(&mut self, key: &str, replica: usize) {
        if self.young.len() >= self.half && !self.young.contains_key(key) {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(key.to_string(), replica);
    }

    fn forget(&mut self, key: &str) {
        self.young.remove(key);
        self.old.remove(key);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

/// A router over `replicas` replicas.
#[derive(Debug)]
pub(crate) struct Router {
    by: RouteBy,
    replicas: usize,
    next: AtomicUsize,
    keys: Mutex<Remembered>,
}

/// The token naming `replica`: opaque to a client (hex of
/// `arbor-replica-N`).
pub(crate) fn token_for(replica: usize) -> String {
    format!("arbor-replica-{replica}")
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The replica a token names, if it is one of ours.
fn replica_of_token(token: &str) -> Option<usize> {
    let bytes = token.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    let decoded: Option<Vec<u8>> = bytes
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect();
    let text = String::from_utf8(decoded?).ok()?;
    text.strip_prefix("arbor-replica-")?.parse().ok()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

impl Router {
    pub(crate) fn new(by: RouteBy, replicas: usize, max_keys: usize) -> Self {
        Router {
            by,
            replicas: replicas.max(1),
            next: AtomicUsize::new(0),
            keys: Mutex::new(Remembered::new(max_keys)),
        }
    }

    pub(crate) fn by(&self) -> &RouteBy {
        &self.by
    }

    fn round_robin(&self) -> usize {
        self.next.fetch_add(1, Relaxed) % self.replicas
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Remembered> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The replica of `key`: remembered, or placed round-robin now.
    fn keyed(&self, key: Option<&str>) -> usize {
        let Some(key) = key else {
            return self.round_robin();
        };
        let mut keys = self.keys();
        match keys.get(key) {
            Some(r) => r,
            None => {
                let r = self.round_robin();
                keys.put(key, r);
                r
            }
        }
    }

    /// Where a request with `headers` (and, for [`RouteBy::User`], the
    /// body's `user`) goes.
    pub(crate) fn route(&self, headers: &HeaderMap, user: Option<&str>) -> Routed {
        let replica = match &self.by {
            RouteBy::RoundRobin => self.round_robin(),
            RouteBy::Affinity => self.keyed(header(headers, SESSION_AFFINITY_HEADER)),
            RouteBy::Header(name) => self.keyed(header(headers, name)),
            RouteBy::User => self.keyed(user.filter(|u| !u.is_empty())),
            RouteBy::Dynamo => self.dynamo(headers),
            RouteBy::Token => {
                let named = header(headers, SESSION_TOKEN_HEADER)
                    .and_then(replica_of_token)
                    .filter(|&r| r < self.replicas);
                let replica = named.unwrap_or_else(|| self.round_robin());
                return Routed {
                    replica,
                    token: Some(token_for(replica)),
                };
            }
        };
        Routed {
            replica,
            token: None,
        }
    }

    fn dynamo(&self, headers: &HeaderMap) -> usize {
        let Some(session) = header(headers, DYNAMO_SESSION_HEADER) else {
            return self.round_robin();
        };
        let last =
            header(headers, DYNAMO_FINAL_HEADER).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let mut keys = self.keys();
        let replica = match keys.get(session) {
            Some(r) => r,
            None => {
                let parent = header(headers, DYNAMO_PARENT_HEADER).and_then(|p| keys.get(p));
                let r = parent.unwrap_or_else(|| self.round_robin());
                keys.put(session, r);
                r
            }
        };
        if last {
            keys.forget(session);
        }
        replica
    }

    /// Keys remembered now.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.keys().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn modes_parse_and_print() {
        for text in [
            "affinity",
            "dynamo",
            "token",
            "user",
            "round-robin",
            "header:x-user",
        ] {
            assert_eq!(text.parse::<RouteBy>().unwrap().to_string(), text);
        }
        assert_eq!(
            "header:X-User".parse::<RouteBy>().unwrap(),
            RouteBy::Header("x-user".into())
        );
        for bad in ["sticky", "header:", "header:a b"] {
            let e = bad.parse::<RouteBy>().unwrap_err().to_string();
            assert!(e.starts_with("expected"), "{e}");
        }
    }

    #[test]
    fn a_key_stays_and_new_keys_spread() {
        let r = Router::new(RouteBy::Affinity, 3, MAX_KEYS);
        let a = r
            .route(&headers(&[(SESSION_AFFINITY_HEADER, "a")]), None)
            .replica;
        let b = r
            .route(&headers(&[(SESSION_AFFINITY_HEADER, "b")]), None)
            .replica;
        let c = r
            .route(&headers(&[(SESSION_AFFINITY_HEADER, "c")]), None)
            .replica;
        let mut all = vec![a, b, c];
        all.sort();
        assert_eq!(all, [0, 1, 2]);
        for _ in 0..5 {
            assert_eq!(
                r.route(&headers(&[(SESSION_AFFINITY_HEADER, "b")]), None)
                    .replica,
                b
            );
        }
    }

    #[test]
    fn remembered_keys_are_bounded() {
        let r = Router::new(RouteBy::User, 2, 100);
        for i in 0..10_000 {
            r.route(&HeaderMap::new(), Some(&format!("u{i}")));
        }
        assert!(r.remembered() <= 100, "{}", r.remembered());
    }

    #[test]
    fn tokens_name_their_replica() {
        for i in [0, 1, 7, 123] {
            assert_eq!(replica_of_token(&token_for(i)), Some(i));
        }
        assert_eq!(replica_of_token("zz"), None);
        assert_eq!(replica_of_token("abc"), None);
    }
}
