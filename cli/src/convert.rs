//! `arbor convert`: the flags to the library's conversion
//! ([`arbor::convert::convert`]); `--to arbor` is the only target so far
//! (clap checks the name).

use arbor::convert::ConvertOptions;
use arbor::Error;

use crate::args::ConvertArgs;
use crate::console::Console;
use crate::options;

/// `arbor convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Error> {
    let options = ConvertOptions {
        inputs: args.traces.inputs.clone(),
        format: args.traces.format,
        output: args.output.clone(),
        subset: options::subset(&args.subset, args.seed),
    };
    arbor::convert::convert(&options, &Console::default()).map(|_| ())
}
