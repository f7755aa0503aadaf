//! `arbor merge`: shards of one plan joined into the unsharded result.
//!
//! `manifest.rs` the manifest a shard's timeline carries
//! (`FILE.shard.json`), `timeline.rs` the checks and the streaming merge
//! of timelines. Uses no other command.

pub mod manifest;
mod timeline;

use crate::args::MergeArgs;
use crate::failure::Failure;

pub fn run(args: &MergeArgs) -> Result<(), Failure> {
    if let Some(dir) = args.inputs.iter().find(|p| p.is_dir()) {
        return Err(Failure::input(format!(
            "{}: a directory; `arbor merge` joins the --timeline files of `arbor plan --shard I/N` \
             (merging run directories is not built yet)",
            dir.display()
        )));
    }
    let written = timeline::merge(&args.inputs, &args.out)?;
    eprintln!(
        "arbor merge: {} shards, {} timeline lines in {}",
        written.shards,
        written.lines,
        args.out.display()
    );
    if written.ties > 0 {
        eprintln!(
            "arbor merge: {} plays started at the same nanosecond as a play of another shard; \
             their lines are exact but their order among those plays may differ from an \
             unsharded plan when a zero service time chained events at that instant",
            written.ties
        );
    }
    Ok(())
}
