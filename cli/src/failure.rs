//! [`Failure`]: an error and the exit code it deserves. Every command
//! returns one; `main` prints it and exits with its code. The codes
//! (docs/cli.md): 1 arbor failed, 2 bad flags or inputs, 3 a run finished
//! but its client failed requests, 128 + the signal that stopped a run.

/// An error and the exit code it deserves.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input or bad flags: exit code 2.
    pub fn input(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }

    /// Anything else (e.g. an output file that cannot be written): 1.
    pub fn other(message: impl std::fmt::Display) -> Self {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
}
