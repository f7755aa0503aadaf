//! The report crate in-process: the pages (of runs and of a capacity
//! directory), the exports and compare on hand-written directories,
//! through the library's own entry points
//! (no `arbor` binary, no port). What the `arbor` process does with them
//! (exit codes, what it prints, `--help`) is tested in `cli/tests/it`.

mod capacity;
mod compare;
mod export;
mod page;
mod util;
