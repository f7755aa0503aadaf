//! Compressed inputs: gzip read as zstd is, and a compressed file
//! recognised by its decompressed content, not its extension; a truncated
//! or garbage stream is an error naming the file.

use std::io::Write;
use std::path::{Path, PathBuf};

use arbor_formats::input::Format;
use arbor_formats::load::{detect, load_path, Codec, Prefix};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(rel)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// A zstd frame of raw (stored) blocks: valid zstd any decoder reads,
/// built here because the decoder crate has no encoder.
fn zstd_stored(bytes: &[u8]) -> Vec<u8> {
    const BLOCK: usize = 128 * 1024;
    let mut out = vec![0x28, 0xB5, 0x2F, 0xFD];
    // Frame header: no checksum, no content size; window 2^(10 + 7) bytes.
    out.extend([0x00, 7 << 3]);
    let chunks: Vec<&[u8]> = if bytes.is_empty() {
        vec![&[]]
    } else {
        bytes.chunks(BLOCK).collect()
    };
    for (i, chunk) in chunks.iter().enumerate() {
        let last = u32::from(i + 1 == chunks.len());
        let header = last | ((chunk.len() as u32) << 3);
        out.extend(&header.to_le_bytes()[..3]);
        out.extend(*chunk);
    }
    out
}

/// A temporary file holding `bytes`, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let dir = std::env::temp_dir().join(format!("arbor-compressed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_gzipped_fixture_loads_to_the_same_trees_as_the_plain_one() {
    for (rel, format) in [
        ("abench/sample.jsonl", Format::Abench),
        ("weka-kv-cache-tester/trace_0277.json", Format::Weka),
        (
            "mooncake-fast25/conversation_trace.head400.jsonl",
            Format::Mooncake,
        ),
    ] {
        let plain_path = testdata(rel);
        let plain = load_path(&plain_path, None).expect("plain loads");
        let bytes = std::fs::read(&plain_path).expect("read");
        let name = format!("gz-{}.gz", rel.replace('/', "-"));
        let packed = TempFile::new(&name, &gzip(&bytes));
        assert_eq!(detect(&packed.0).expect("detects"), format, "{rel}");
        let loaded = load_path(&packed.0, None).expect("gzip loads");
        assert_eq!(loaded.format, Some(format), "{rel}");
        assert!(!plain.trees.is_empty());
        assert_eq!(loaded.trees.len(), plain.trees.len(), "{rel}");
        for (a, b) in loaded.trees.iter().zip(&plain.trees) {
            assert_eq!(a.id, b.id, "{rel}");
            assert_eq!(a.agents, b.agents, "{rel}");
        }
    }
}

#[test]
fn a_zstd_weka_or_mooncake_file_is_recognised_by_its_content() {
    for (rel, format) in [
        ("weka-kv-cache-tester/trace_0291.json", Format::Weka),
        (
            "mooncake-fast25/synthetic_trace.head300.jsonl",
            Format::Mooncake,
        ),
    ] {
        let plain_path = testdata(rel);
        let bytes = std::fs::read(&plain_path).expect("read");
        // The extension says nothing: `.zst` on JSON that is not abench.
        let name = format!("zst-{}.zst", rel.replace('/', "-"));
        let packed = TempFile::new(&name, &zstd_stored(&bytes));
        let prefix = Prefix::read(&packed.0).expect("prefix");
        assert_eq!(prefix.compressed, Some(Codec::Zstd));
        assert_eq!(detect(&packed.0).expect("detects"), format, "{rel}");
        let loaded = load_path(&packed.0, None).expect("zstd loads");
        let plain = load_path(&plain_path, None).expect("plain loads");
        assert_eq!(loaded.format, Some(format));
        assert_eq!(loaded.trees.len(), plain.trees.len(), "{rel}");
        assert_eq!(
            loaded.trees.first().map(|t| &t.agents),
            plain.trees.first().map(|t| &t.agents)
        );
    }
}

#[test]
fn a_truncated_or_garbage_gzip_file_is_an_error_naming_it() {
    let bytes = std::fs::read(testdata("abench/sample.jsonl")).expect("read");
    let packed = gzip(&bytes);
    let truncated = TempFile::new("truncated.jsonl.gz", &packed[..packed.len() / 2]);
    let mut noise = vec![0x1F, 0x8B, 0x08, 0x00];
    noise.extend((0..4000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let garbage = TempFile::new("garbage.jsonl.gz", &noise);
    for (file, format) in [
        (&truncated, None),
        (&garbage, None),
        (&truncated, Some(Format::Weka)),
    ] {
        let err = load_path(&file.0, format).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains(&file.0.display().to_string()), "{text}");
        assert!(text.contains("corrupt gzip stream"), "{text}");
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_line_cap() {
    // A Mooncake row, then a line of 64 MiB and more that compresses to
    // almost nothing: read only up to the cap, then refused with it.
    let mut text =
        br#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#.to_vec();
    text.push(b'\n');
    text.resize(text.len() + (64 << 20) + 1024, b'a');
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(&text).expect("gzip");
    let packed = encoder.finish().expect("gzip");
    drop(text);
    assert!(packed.len() < 1 << 20, "{} bytes", packed.len());
    let bomb = TempFile::new("bomb.jsonl.gz", &packed);
    assert_eq!(detect(&bomb.0).expect("detects"), Format::Mooncake);
    let err = load_path(&bomb.0, None).expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("bomb.jsonl.gz"), "{text}");
    assert!(text.contains("line 2"), "{text}");
    assert!(text.contains("64 MiB"), "{text}");
}
