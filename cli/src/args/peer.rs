//! Flags users bring from other load generators (AIPerf, oha, k6, vegeta)
//! whose meaning differs from every arbor flag, and the typo tips clap
//! gives for flags it does not know.
//!
//! A flag with the same meaning is an alias on arbor's own flag (`--url`,
//! `-o`, `-H`, `-m`; see docs/cli.md). The ones here are hidden flags that
//! exist only to be refused with a message naming arbor's closest flag and
//! how its meaning differs. Typo tips are kept only when the flag typed is
//! a near miss of the one suggested (today clap's similarity would offer
//! `--grace` for `--rate`).

use arbor::backends::live::request::Api;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Args;

use arbor::backends::endpoint::default_api_key_env;

/// What `--concurrency` and `-c` mean elsewhere, and arbor's nearest flags.
const CONCURRENCY: &str = "arbor has no single concurrency flag: AIPerf's --concurrency and \
oha's -c keep N requests in flight back to back, but arbor replays trees whose turns follow \
recorded gaps and subagents. Closest: --sessions N (a closed loop of N lanes, each running one \
tree at a time, as AIPerf runs multi-turn conversations per concurrency slot; add --loop \
--duration to keep lanes busy). --max-inflight M only caps requests in flight while trees \
arrive by --arrival";

/// What a request rate means elsewhere.
const RATE: &str = "arbor schedules trees (agent sessions), not single requests: \
--arrival rate:R (evenly spaced) or --arrival poisson:R starts R trees per second, and each \
tree's requests follow its recorded dependencies, so the request rate follows from the traces";

/// What a request count means elsewhere.
const COUNT: &str = "arbor replays whole trees, not a request count: --copies K plays every \
tree K times, --duration stops sending new turns after a time (arbor plan prints the requests \
a policy sends)";

const VUS: &str = "the closest is --sessions N: N lanes each replay one tree at a time, as k6's \
virtual users each run one iteration at a time; add --loop --duration to repeat them until the \
time is up, as k6 does";

/// Why not `--api-key`, naming each API's default key variable as
/// [`default_api_key_env`] decides it.
fn api_key_refusal() -> String {
    format!(
        "arbor takes the API key from an environment variable ({}, {} with --api messages, \
or the one --api-key-env names) or a file (--api-key-file), sent as Authorization: Bearer \
(x-api-key with --api messages) and never stored, so it stays out of shell history and \
summary.json; or pass --header Authorization=\"Bearer ...\" (--header x-api-key=... with \
--api messages)",
        default_api_key_env(Api::Chat),
        default_api_key_env(Api::Messages),
    )
}

/// Hidden flags of other tools, refused with an explanation.
#[derive(Debug, Args, Clone, Default)]
pub struct PeerFlags {
    #[arg(long, short = 'c', hide = true, num_args = 0..=1, default_missing_value = "")]
    concurrency: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    request_rate: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    rate: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    rps: Option<String>,
    #[arg(long = "requests", short = 'n', hide = true, num_args = 0..=1, default_missing_value = "", alias = "request-count")]
    requests: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    vus: Option<String>,
    #[arg(long, hide = true, num_args = 0..=1, default_missing_value = "")]
    api_key: Option<String>,
}

impl PeerFlags {
    /// The message for the first peer flag given, if any (the value of
    /// `--api-key` is never shown).
    pub fn refused(&self) -> Option<String> {
        let api_key = api_key_refusal();
        let checks: [(&Option<String>, &str, &str); 7] = [
            (&self.concurrency, "--concurrency/-c", CONCURRENCY),
            (&self.request_rate, "--request-rate", RATE),
            (&self.rate, "--rate", RATE),
            (&self.rps, "--rps", RATE),
            (&self.requests, "--requests/-n", COUNT),
            (&self.vus, "--vus", VUS),
            (&self.api_key, "--api-key", &api_key),
        ];
        checks
            .iter()
            .find(|(given, _, _)| given.is_some())
            .map(|(_, flag, why)| format!("{flag} is not an arbor flag: {why}"))
    }
}

/// Is `long` (without dashes) one of the refused flags of other tools?
/// clap would offer them as tips, as hidden flags are in its keymap.
fn is_peer_flag(long: &str) -> bool {
    PeerFlags::augment_args(clap::Command::new("peer"))
        .get_arguments()
        .flat_map(|arg| arg.get_long_and_visible_aliases().into_iter().flatten())
        .chain(["request-count"])
        .any(|name| name == long)
}

/// Edit distance (insertions, deletions, substitutions) between two
/// flag names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Is `suggested` a near miss of `typed` (one edit per four characters
/// typed, at least one)? Both without leading dashes.
pub fn near_miss(typed: &str, suggested: &str) -> bool {
    distance(typed, suggested) <= (typed.chars().count() / 4).max(1)
}

/// clap's error, without a "similar argument" tip that is not a near miss.
pub fn without_far_tips(error: clap::Error, cmd: &clap::Command) -> clap::Error {
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let (Some(ContextValue::String(typed)), Some(ContextValue::String(suggested))) = (
        error.get(ContextKind::InvalidArg),
        error.get(ContextKind::SuggestedArg),
    ) else {
        return error;
    };
    let bare = |flag: &str| flag.trim_start_matches('-').to_string();
    let typed_name = bare(typed.split('=').next().unwrap_or(typed));
    let suggested = bare(suggested);
    if near_miss(&typed_name, &suggested) && !is_peer_flag(&suggested) {
        return error;
    }
    let mut plain = clap::Error::new(ErrorKind::UnknownArgument).with_cmd(cmd);
    for kind in [
        ContextKind::InvalidArg,
        ContextKind::TrailingArg,
        ContextKind::Suggested,
        ContextKind::Usage,
    ] {
        if let Some(value) = error.get(kind) {
            plain.insert(kind, value.clone());
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_a_few_edits() {
        assert_eq!(distance("rate", "grace"), 2);
        assert!(!near_miss("rate", "grace"));
        assert!(near_miss("sesions", "sessions"));
        assert!(near_miss("max-inflght", "max-inflight"));
        assert!(near_miss("concurency", "concurrency"));
        assert!(!near_miss("output", "out"));
    }
}
