//! `arbor convert`: the flags to the library's conversion
//! ([`arbor::convert::convert`]), and the account it returns printed
//! human or as JSON (`--json`).

use arbor::convert::ConvertOptions;
use arbor::Error;

use crate::args::ConvertArgs;
use crate::console::Console;
use crate::{options, stdout};

/// `arbor convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Error> {
    let options = ConvertOptions {
        inputs: args.traces.inputs.clone(),
        format: args.traces.format,
        target: args.to,
        output: args.output.clone(),
        subset: options::subset(&args.subset, args.seed),
    };
    let account = arbor::convert::convert(&options, &Console::default())?;
    stdout::json_or_human(args.json, &account, |out| account.write_human(out))
}
