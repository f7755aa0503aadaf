//! The bundled sample workload: the four real Weka traces in
//! `testdata/weka-kv-cache-tester/` (Apache-2.0, see the README there),
//! compiled into the binary so `arbor plan` works with no input at all.

use arbor_engine::{InputError, Workload};
use arbor_formats::load::weka;

/// `(sample:NAME, text)` of each bundled trace.
pub const TRACES: [(&str, &str); 4] = [
    (
        "sample:trace_0187.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0187.json"),
    ),
    (
        "sample:trace_0277.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0277.json"),
    ),
    (
        "sample:trace_0291.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0291.json"),
    ),
    (
        "sample:trace_0504.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0504.json"),
    ),
];

/// The sample as a workload: 4 trees, 10 agents, 91 turns.
pub fn workload() -> Result<Workload, InputError> {
    let mut workload = Workload::default();
    for (source, text) in TRACES {
        let (tree, _) = weka::parse_trace(text, source)?;
        workload.trees.push(tree);
    }
    Ok(workload)
}
