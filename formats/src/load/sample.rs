//! The bundled sample ([`crate::sample`]'s texts) read as a workload by
//! the Weka reader: what `arbor plan` and `run` replay with no input.

use arbor_engine::{InputError, Workload};

use super::weka;
use crate::sample::TRACES;

/// The sample as a workload: 4 trees, 10 agents, 91 turns.
pub fn workload() -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for (source, text) in TRACES {
        let (tree, _) = weka::parse_trace(text, source)?;
        workload.trees.push(tree);
    }
    Ok(workload)
}
