//! Which files an input path stands for: a file as given, a directory's
//! trace files (`*.json`, `*.jsonl`, `*.zst`, `*.gz`, sorted, not recursive), or
//! `None` for a stream. Shared by the loader (`load` re-exports both
//! functions) and by what hashes a corpus without reading it (`data`):
//! listing files is not reading them, so it needs no reader.

use std::path::{Path, PathBuf};

use arbor_engine::error::InputError;

/// The trace files of a directory: `*.json`, `*.jsonl`, `*.zst` and `*.gz`,
/// sorted by name, not recursive. One that is not a regular file (a FIFO,
/// a device, a socket) is refused by name: reading it could wait forever.
pub fn directory_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let name = dir.display().to_string();
    let unreadable =
        |e: std::io::Error| InputError::whole(&name, format!("cannot read directory: {e}"));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        let wanted = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            ["json", "jsonl", "zst", "gz"]
                .iter()
                .any(|w| e.eq_ignore_ascii_case(w))
        });
        if !wanted {
            continue;
        }
        let meta = std::fs::metadata(&path).map_err(|e| {
            InputError::whole(path.display().to_string(), format!("cannot read: {e}"))
        })?;
        if meta.is_file() {
            files.push(path);
        } else if !meta.is_dir() {
            return Err(InputError::whole(
                path.display().to_string(),
                "not a regular file (a FIFO, device or socket): expected the trace files of a directory to be regular files (give a FIFO as an INPUT of its own)",
            ));
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(InputError::whole(
            name,
            "no trace files in this directory: expected *.json, *.jsonl, *.zst or *.gz files",
        ));
    }
    Ok(files)
}

/// The trace files of input paths, as the loader reads them: a file as
/// given, a directory's trace files ([`directory_files`]). `None`
/// when an input is stdin (`-`) or a stream: nothing to hash twice.
pub fn trace_files(inputs: &[PathBuf]) -> Result<Option<Vec<PathBuf>>, String> {
    let mut files = Vec::new();
    for input in inputs {
        if input == Path::new("-") {
            return Ok(None);
        }
        let meta = std::fs::metadata(input).map_err(|e| format!("{}: {e}", input.display()))?;
        if !(meta.is_file() || meta.is_dir()) {
            return Ok(None);
        }
        if meta.is_dir() {
            let listed = directory_files(input).map_err(|e| e.to_string())?;
            files.extend(listed);
        } else {
            files.push(input.clone());
        }
    }
    Ok(Some(files))
}
