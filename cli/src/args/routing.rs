//! `arbor run`'s session-routing and replica flags (docs/routing.md):
//! how each request names its conversation, how requests are placed on
//! several `--endpoint`s, and which response header names the replica
//! that served one.

use arbor::backends::live::placement::Placement;
use arbor::backends::live::routing::SessionRouting;
use clap::Args;

use super::heading::SERVER;

#[derive(Debug, Args, Clone)]
pub struct RoutingArgs {
    /// How a request names its conversation for a router: affinity
    /// (X-Session-Affinity), dynamo, token[:HEADER], user, header:NAME,
    /// sglang or none.
    #[arg(long, value_name = "MODE", default_value = "affinity", help_heading = SERVER)]
    pub session_routing: SessionRouting,

    /// With several --endpoint: sticky (a conversation stays on one), or per
    /// request round-robin, least-loaded or random.
    #[arg(long, value_name = "RULE", default_value = "sticky", help_heading = SERVER)]
    pub placement: Placement,

    /// The response header naming the replica that served a request
    /// (recorded as served_by), e.g. x-arbor-replica.
    #[arg(long, value_name = "NAME", value_parser = header_name, help_heading = SERVER)]
    pub replica_header: Option<String>,
}

fn header_name(text: &str) -> Result<String, String> {
    arbor::backends::live::routing::header_name(text).map(|_| text.to_string())
}
