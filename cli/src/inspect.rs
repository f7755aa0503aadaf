//! `arbor inspect`: load, summarise, print (human or JSON).

use arbor_engine::derive::DeriveOptions;
use arbor_engine::inspect::inspect;
use arbor_engine::load;

use crate::args::InspectArgs;
use crate::failure::Failure;
use crate::stdout;

pub fn run(args: &InspectArgs) -> Result<(), Failure> {
    let options = DeriveOptions {
        overlap_tolerance: args.overlap_tolerance,
    };
    let loaded = load::load_all(&args.traces.inputs, args.traces.format).map_err(Failure::input)?;
    let inspection = inspect(&loaded, &options);
    stdout::json_or_human(args.json, &inspection, |mut out| {
        inspection.write_human(&mut out)
    })
}
