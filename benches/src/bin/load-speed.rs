//! Measures how fast a corpus loads, and the peak memory it takes.
//!
//! `cargo run --release -p arbor-benches --bin load-speed -- FILE [--format NAME]`
//!
//! Prints bytes, trees, turns, seconds, MB/s and the process's peak
//! resident memory (VmHWM) as a multiple of the file size. Run it in its
//! own process (not after generating the corpus) so the peak is the
//! loader's.

use std::path::Path;
use std::time::Instant;

use arbor_formats::input::Format;
use arbor_formats::load::load_path;

fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: load-speed FILE [--format NAME]");
        std::process::exit(2);
    };
    let format: Option<Format> = match args.get(2).map(String::as_str) {
        Some("--format") => Some(
            args.get(3)
                .and_then(|f| f.parse().ok())
                .expect("a format name"),
        ),
        _ => None,
    };
    let bytes = std::fs::metadata(path).expect("input exists").len();
    let start = Instant::now();
    let loaded = match load_path(Path::new(path), format) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let turns: usize = loaded.trees.iter().map(|t| t.turn_count()).sum();
    let peak = peak_rss_bytes().unwrap_or(0);
    println!(
        "{path}: {:.1} MB, {} trees, {turns} turns, {seconds:.2} s, {:.0} MB/s, peak RSS {:.0} MB ({:.2}x the file)",
        bytes as f64 / 1e6,
        loaded.trees.len(),
        bytes as f64 / 1e6 / seconds,
        peak as f64 / 1e6,
        peak as f64 / bytes as f64
    );
}
