//! arbor-runs' integration tests: the library as a user calls it.

mod hostile;
mod read_run;
mod record_line;
mod replicas;
