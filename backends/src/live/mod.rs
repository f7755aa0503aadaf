//! The live driver: the scheduler against a real OpenAI-compatible (or
//! Anthropic Messages) server.
//!
//! - `driver`: the loop ([`run`], one handler per event) and what a caller
//!   hands in and gets back ([`LiveConfig`], [`RecordSink`], [`Progress`],
//!   [`RunOutcome`], [`LiveError`]);
//! - `turn`: what the loop reads of a dispatched request from the
//!   scheduler (its body's recipe, its identity for the record);
//! - [`prebuild`]: request bodies, built ahead of their turn when possible;
//! - [`request`]: a request body (chat, completions, Messages or
//!   Responses) from a turn, the Responses body by [`responses_body`];
//! - [`exchange`]: one request's HTTP exchange and its stamps;
//! - [`http`], [`framing`]: arbor's own HTTP/1.1 client (connections, the
//!   pool, response heads, body framing);
//! - [`stream`], [`tls`]: a connection's bytes, plain or TLS, and opening
//!   one; the TLS configuration (roots, `cacert`, `insecure`, ALPN) and
//!   handshake failures in plain words;
//! - [`sse`]: server-sent event lines and what an OpenAI `data:` payload
//!   says; [`messages_sse`]: what an Anthropic Messages event says;
//!   [`responses_sse`]: what an OpenAI Responses event says;
//! - [`history`]: `--history live`: the generated text of an agent's
//!   turn, kept until its next turn is built from it;
//! - [`numbering`]: request and play numbers shared by the loops of one
//!   process (`--threads`);
//! - [`record`]: what a request records, and how errors are classed;
//! - [`redact`]: the secrets among a target's headers, taken out of
//!   recorded error messages;
//! - [`routing`]: how a request says which conversation it belongs to
//!   (`--session-routing`); [`placement`]: which of several endpoints it
//!   goes to (`--placement`).
//!
//! This module only declares them and re-exports the loop's interface.

mod driver;
pub mod exchange;
pub mod framing;
pub mod history;
pub mod http;
pub mod messages_sse;
pub mod numbering;
pub mod placement;
pub mod prebuild;
pub mod record;
pub mod redact;
pub mod request;
pub mod responses_body;
pub mod responses_sse;
pub mod retry;
pub mod routing;
mod shape;
pub mod sse;
pub mod stream;
pub mod tls;
mod turn;

pub use driver::{
    run, run_among, warm_pool, Among, LiveConfig, LiveError, Progress, Replicas, RunOutcome,
};
