//! Placeholder: this format's reader is being written.

use std::path::Path;

use super::Loaded;
use crate::error::InputError;

/// Does this start of a file look like this format?
pub fn looks_like(_text_prefix: &str) -> bool {
    false
}

/// Reads a file of this format.
pub fn load(path: &Path) -> Result<Loaded, InputError> {
    Err(InputError::whole(
        path.display().to_string(),
        "this format is not supported yet",
    ))
}
