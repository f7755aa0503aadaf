//! `arbor data`: the dataset registry's subcommands (docs/data.md).

use std::path::PathBuf;

use arbor::engine::time::Nanos;
use clap::{Args, Subcommand};

use super::values;

/// `data fetch --timeout`'s default: the library's
/// (`arbor::backends::fetch::DEFAULT_TIMEOUT`).
const FETCH_TIMEOUT: &str = "30";

/// `data fetch --max-bytes`'s default: the library's
/// (`arbor::backends::fetch::DEFAULT_MAX_BYTES`).
const FETCH_MAX_BYTES: &str = "4GiB";

#[derive(Debug, Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// List the registry's datasets: name, files, size, pinned or not,
    /// fetched or not.
    List,
    /// Show one dataset: source, revision, files with sizes and SHA-256,
    /// manifest hash, where it is fetched to.
    Info {
        /// The dataset's name (see `arbor data list`).
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Download a dataset, resumable (HTTP Range), each file SHA-256
    /// verified before it is moved into place. An unpinned entry (a file
    /// without a size or a SHA-256) is fetched from its own base URL and
    /// pinned on first use (recorded as trust_on_first_use; later fetches
    /// verify against it).
    Fetch {
        #[arg(value_name = "NAME")]
        name: String,
        /// Where to put the files (default: ~/.cache/arbor/datasets/NAME,
        /// under $XDG_CACHE_HOME when set). Only regular files NAME and
        /// NAME.part are written there, never through a link.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Bound on each wait: a connection and the response head, then
        /// each next byte; a body must also keep 1 KiB/s over each such
        /// stretch. A stall is an error naming the URL.
        #[arg(long, value_name = "DURATION", default_value = FETCH_TIMEOUT, value_parser = values::positive_duration)]
        timeout: Nanos,
        /// The most bytes of a file the registry gives no size for (e.g.
        /// 4GiB, 512MiB, 1000000); a file with a size takes exactly it.
        #[arg(long, value_name = "BYTES", default_value = FETCH_MAX_BYTES, value_parser = values::byte_count)]
        max_bytes: u64,
    },
    /// Record the SHA-256 of a local directory's trace files as dataset
    /// NAME in the user registry (~/.config/arbor/datasets.toml): a local
    /// pin, under a name of its own (not a registry dataset's), usable as
    /// data:NAME; it never counts as the registry's corpus.
    Pin {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        #[arg(long, value_name = "NAME")]
        name: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor::backends::fetch::{DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT};

    #[test]
    fn fetch_defaults_are_the_librarys() {
        assert_eq!(
            values::positive_duration(FETCH_TIMEOUT),
            Ok(DEFAULT_TIMEOUT.as_nanos() as u64)
        );
        assert_eq!(values::byte_count(FETCH_MAX_BYTES), Ok(DEFAULT_MAX_BYTES));
    }
}
