//! `arbor data`: the dataset registry's subcommands (docs/data.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

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
    /// verified before it is moved into place. An entry without hashes is
    /// fetched from its own base URL and pinned on first use (recorded as
    /// trust_on_first_use; later fetches verify against it).
    Fetch {
        #[arg(value_name = "NAME")]
        name: String,
        /// Where to put the files (default: ~/.cache/arbor/datasets/NAME,
        /// under $XDG_CACHE_HOME when set).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
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
