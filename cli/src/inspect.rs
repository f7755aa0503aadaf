//! `arbor inspect`: load, fit (`--isl-scale`, `--max-context`, said on
//! stderr), summarise, print (human or JSON).

use arbor_engine::derive::DeriveOptions;
use arbor_engine::fit::apply_trees;
use arbor_engine::inspect::inspect;
use arbor_engine::load;

use crate::args::InspectArgs;
use crate::failure::Failure;
use crate::report::describe_fit;
use crate::stdout;

pub fn run(args: &InspectArgs) -> Result<(), Failure> {
    let options = DeriveOptions {
        overlap_tolerance: args.overlap_tolerance,
    };
    let paths = crate::data::resolve_inputs(&args.traces.inputs)?;
    let mut loaded = load::load_all(&paths, args.traces.format).map_err(Failure::input)?;
    let fit = args.fit.fit();
    if !fit.is_identity() {
        let report = apply_trees(loaded.iter_mut().flat_map(|l| l.trees.iter_mut()), &fit);
        eprintln!("arbor inspect: {}", describe_fit(&report));
    }
    let inspection = inspect(&loaded, &options);
    stdout::json_or_human(args.json, &inspection, |mut out| {
        inspection.write_human(&mut out)
    })
}
