//! `arbor record`'s flags: the upstream, where the proxy listens, the
//! capture file, the session header, redaction and TLS trust.

use std::net::SocketAddr;
use std::path::PathBuf;

use arbor::backends::live::tls::TlsOptions;
use clap::Args;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The server the agent's requests go to: its root URL
    /// (`https://api.openai.com`, `https://api.anthropic.com`,
    /// `http://127.0.0.1:8000`); a `/v1` at its end is taken off, since the
    /// agent's own paths carry it.
    #[arg(long, value_name = "URL", value_parser = arbor::backends::endpoint::normalize_endpoint)]
    pub upstream: String,

    /// Address the proxy listens on: point the agent's base URL at it.
    /// Port 0 picks a free port (printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,

    /// The capture file (openai-log JSONL), one line per chat or Messages
    /// exchange, written as each response ends. Overwritten.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,

    /// A request header that names the agent session: its value becomes
    /// the line's `session_id` (the header itself is never written).
    /// Without it, the session headers of common agent clients are read
    /// (Claude Code's `X-Claude-Code-Session-Id`, Codex's `session-id`,
    /// ...; docs/record.md).
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
}

impl RecordArgs {
    /// What to trust over an `https://` upstream.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
    }
}
