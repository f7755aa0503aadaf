//! [`Failure`]: an error and the exit code it deserves. Every command
//! returns one; `main` prints it and exits with its code.

/// An error and the exit code it deserves.
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
