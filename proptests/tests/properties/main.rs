//! arbor's guarantees as properties. `PROPTEST_CASES=N` raises the number
//! of cases (CI runs the defaults in each module).

mod loaders;
mod scheduling;
