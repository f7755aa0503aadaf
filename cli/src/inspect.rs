//! `arbor inspect`: the flags to the library's inspection
//! ([`arbor::inspect::inspect_inputs`]), printed human or as JSON.

use arbor::inspect::InspectOptions;
use arbor::options::SubsetOptions;
use arbor::Error;

use crate::args::InspectArgs;
use crate::console::Console;
use crate::{options, stdout};

/// `arbor inspect`.
pub fn run(args: &InspectArgs) -> Result<(), Error> {
    let options = InspectOptions {
        inputs: args.traces.inputs.clone(),
        format: args.traces.format,
        fit: options::fit(&args.fit),
        overlap_tolerance: args.overlap_tolerance,
        json: args.json,
        trees: args.trees,
        subset: SubsetOptions {
            names: args.tree_names.clone(),
            max_requests: args.max_requests,
            ..SubsetOptions::default()
        },
    };
    let inspected = arbor::inspect::inspect_inputs(&options, &Console::default())?;
    stdout::json_or_human(args.json, &inspected, |out| inspected.write_human(out))
}
