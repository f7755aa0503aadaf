//! `arbor compare BASE NEW...`: the flags to [`arbor::report::compare`]'s
//! options, its table (or `--json`) on stdout, each run compared although
//! not comparable (`--allow-different`) and each crossed threshold on
//! stderr, and the gate's fault (exit 1) when one was crossed.

use arbor::report::compare::{self, CompareOptions};
use arbor::Error;

use crate::args::CompareArgs;
use crate::stdout;

pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let options = CompareOptions {
        base: args.base.clone(),
        new: args.new.clone(),
        fail_on: args.fail_on.iter().flat_map(|t| t.0.clone()).collect(),
        seed: args.seed,
        resamples: args.resamples,
        allow_different: args.allow_different,
    };
    let comparison = compare::compare(&options)?;
    for line in comparison.not_comparable() {
        eprintln!("arbor compare: warning: not comparable (--allow-different): {line}");
    }
    stdout::print(|out| {
        if args.json {
            comparison.write_json(out)
        } else {
            comparison.write_human(out)
        }
    })?;
    for line in comparison.crossed() {
        eprintln!("arbor compare: threshold crossed: {line}");
    }
    comparison.gate()
}
