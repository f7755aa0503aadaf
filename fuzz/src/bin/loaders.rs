//! Fuzz target: every input loader (`arbor_formats::load`) on arbitrary
//! bytes. The first byte picks the reader (`FORMATS[i]`, or detection by
//! content when it is past the table); the rest is the file. Loaders read
//! paths only, so each input is written to one scratch file first (in
//! /dev/shm when there is one). A loader may refuse any input with an
//! error; it must never panic, abort or hang.

use std::path::PathBuf;

use arbor_formats::load::{load_path, FORMATS};

fn scratch_file() -> PathBuf {
    let dir = PathBuf::from("/dev/shm");
    let dir = if dir.is_dir() {
        dir
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("arbor-fuzz-loaders-{}", std::process::id()))
}

fn main() {
    let path = scratch_file();
    afl::fuzz!(|data: &[u8]| {
        let Some((&pick, file)) = data.split_first() else {
            return;
        };
        std::fs::write(&path, file).expect("the scratch file can be written");
        let format = FORMATS.get(usize::from(pick) % (FORMATS.len() + 1));
        let _ = load_path(&path, format.map(|reader| reader.format));
    });
}
