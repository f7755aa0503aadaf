//! `arbor record`'s flags: the upstream, where the proxy listens, the
//! capture file, the session header, redaction, TLS trust, and the
//! proxy's bounds (connections, request size, read timeout, what a failed
//! capture write does).

use std::net::SocketAddr;
use std::path::PathBuf;

use std::time::Duration;

use arbor::backends::live::tls::TlsOptions;
use arbor::backends::record::{self, RecordOptions};
use arbor::engine::time::Nanos;
use clap::Args;

use super::values;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The server the agent's requests go to: its root URL
    /// (`https://api.openai.com`, `https://api.anthropic.com`,
    /// `http://127.0.0.1:8000`); a `/v1` at its end is taken off, since the
    /// agent's own paths carry it.
    #[arg(long, value_name = "URL", value_parser = arbor::backends::endpoint::normalize_endpoint)]
    pub upstream: String,

    /// Address the proxy listens on: point the agent's base URL at it.
    /// Port 0 picks a free port (printed at start). A non-loopback address
    /// (`0.0.0.0`) is warned about: others could use the proxy.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,

    /// The capture file (openai-log JSONL), one line per chat, Messages or
    /// Responses exchange, written as each response ends. Overwritten.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,

    /// A request header that names the agent session: its value becomes
    /// the line's `session_id` (the header itself is never written).
    /// Without it, `X-Session-Id`. Agent clients' own identity headers
    /// (Claude Code's, Codex's, Dynamo's, OpenCode's) are recorded as the
    /// line's `identity` either way (docs/record.md).
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,

    /// Replace every text of the capture (messages, answers, tool calls,
    /// errors) with synthesized text of the same length, keeping token
    /// counts and which texts share which prefixes, so a replay hits the
    /// prefix cache as the original did (docs/record.md, "Redaction").
    #[arg(long)]
    pub redact: bool,

    /// Trust only the CA certificates of this PEM file for an https://
    /// upstream (instead of the system's roots).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// Do not verify the upstream's TLS certificate.
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,

    /// If the capture cannot be written (a full disk), keep forwarding the
    /// agent's requests, unrecorded, saying so on stderr, instead of
    /// stopping at once. Either way the exit is 1.
    #[arg(long)]
    pub forward_without_recording: bool,

    /// Client connections served at once; beyond it, new connections wait
    /// in the listen queue until one closes.
    #[arg(long, value_name = "N", default_value_t = record::DEFAULT_MAX_CONNECTIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_connections: u32,

    /// The largest request body forwarded (bytes): a larger one gets 413.
    /// Default 32 MiB, the most the Messages API takes.
    #[arg(long, value_name = "BYTES", default_value_t = record::DEFAULT_MAX_REQUEST_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(1..=(1 << 32)))]
    pub max_request_bytes: u64,

    /// The longest a client may take to send a request head (or, on an
    /// idle kept-alive connection, to begin one: then it is closed), and
    /// then its body (or it gets 408).
    #[arg(long, value_name = "DURATION", default_value = "60", value_parser = values::positive_duration)]
    pub read_timeout: Nanos,
}

impl RecordArgs {
    /// The recording these flags ask for.
    pub fn options(&self) -> RecordOptions {
        let mut options = RecordOptions::new(self.upstream.clone(), self.listen, self.out.clone());
        options.session_header = self.session_header.clone();
        options.redact = self.redact;
        options.tls = self.tls();
        options.forward_without_recording = self.forward_without_recording;
        options.max_connections = self.max_connections as usize;
        options.max_request_bytes = usize::try_from(self.max_request_bytes).unwrap_or(usize::MAX);
        options.read_timeout = Duration::from_nanos(self.read_timeout);
        options
    }

    /// What to trust over an `https://` upstream.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
    }
}
