//! Weka agentic-coding traces (placeholder, being written).
use crate::{InputError, Tree};
use std::path::Path;
pub fn load_path(path: &Path) -> Result<Vec<Tree>, InputError> {
    Err(InputError::whole(
        path.display().to_string(),
        "weka loader not written yet",
    ))
}
