//! Reading a whole JSON file of a run directory (`summary.json`,
//! `run.json`, `end.json`, `planned.json`, `repeat.json`, a shard
//! manifest) with a cap: the one rule every reader of those files follows,
//! so none of them reads `/dev/zero`, a FIFO or a planted giant file until
//! allocation fails.
//!
//! Owns [`FILE_CAP`] and what is refused: a path that is not a regular
//! file (after following links), and one longer than the cap, both before
//! more than the cap is read. The caller keeps its own words for a missing
//! file (the error's kind stays [`std::io::ErrorKind::NotFound`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The largest whole file read (256 MiB): `run.json` of a corpus of a
/// million trees lists a million turn counts (under 10 MiB); a summary is
/// a few kilobytes.
pub const FILE_CAP: u64 = 256 << 20;

/// The bytes of `path`, a regular file of at most [`FILE_CAP`] bytes.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file (a device, a FIFO or a directory); expected a file `arbor` wrote",
        ));
    }
    let mut bytes = Vec::new();
    file.take(FILE_CAP + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > FILE_CAP {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "longer than {} MiB; expected a file `arbor` wrote",
                FILE_CAP >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// [`read`] as text: bytes that are not UTF-8 are an error saying so.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_refused_before_it_is_read() {
        // Linked from a run directory, /dev/zero would be read forever.
        let dir = std::env::temp_dir().join(format!("arbor-file-cap-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let link = dir.join("summary.json");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let Err(e) = read(&link) else {
            panic!("a device is refused")
        };
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_over_the_cap_is_refused_and_one_at_the_cap_read() {
        let dir = std::env::temp_dir().join(format!("arbor-file-cap2-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("run.json");
        // A sparse file: no disk used for the cap's bytes.
        let f = File::create(&path).unwrap();
        f.set_len(FILE_CAP + 1).unwrap();
        let Err(e) = read(&path) else {
            panic!("a file over the cap is refused")
        };
        assert!(e.to_string().contains("longer than 256 MiB"), "{e}");
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(read(&path).unwrap(), b"{}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
