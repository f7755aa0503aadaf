//! `arbor merge`: the shards of one plan or run joined into the unsharded
//! result (`arbor::runs::merge`), what was merged said on stderr, and a
//! merged run's report page.

use arbor::runs::merge;
use arbor::Error;

use crate::args::MergeArgs;

pub fn run(args: &MergeArgs) -> Result<(), Error> {
    let dirs = args.inputs.iter().filter(|p| p.is_dir()).count();
    if dirs == args.inputs.len() {
        return run_dirs(args);
    }
    if dirs > 0 {
        return Err(Error::input(
            "give the run directories of `arbor run --shard I/N`, or the --timeline files of \
             `arbor plan --shard I/N`, not both",
        ));
    }
    let written = merge::timeline::merge(&args.inputs, &args.out)?;
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

fn run_dirs(args: &MergeArgs) -> Result<(), Error> {
    let written = merge::run_dir::merge(&args.inputs, &args.out, args.force)?;
    crate::page::write_for_run(&args.out)?;
    eprintln!(
        "arbor merge: {} shards, {} records in {}{}",
        written.shards,
        written.records,
        args.out.display(),
        if written.complete {
            ""
        } else {
            " (a shard did not end cleanly: the merged summary is marked incomplete)"
        }
    );
    for dir in &written.torn {
        eprintln!("arbor merge: {dir}: a torn last record (the shard was killed) was skipped");
    }
    Ok(())
}
