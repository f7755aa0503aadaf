//! `fetch` in-process against a loopback server (`std::net`, a thread per
//! connection): links planted in the directory and file names that leave
//! it (issue 27, item 5), servers that stall after the head, never answer
//! or drip (item 16), and files of no registry size (item 17). Nothing
//! here leaves 127.0.0.1. Each fetch runs on a thread of its own, bounded
//! from outside ([`OUTER`]): before these fixes some never returned.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use arbor_backends::fetch::{fetch, FetchObserver, FetchOptions, Fetched};
use arbor_error::{Error, Kind};
use arbor_formats::data::registry::{Dataset, DatasetFile};
use sha2::{Digest, Sha256};

/// The outer bound on one fetch: its own waits are 1 s (`options()`); a
/// loaded 2-core machine can stretch a run to several seconds, never to
/// this.
const OUTER: Duration = Duration::from_secs(60);

/// What the server sends for one request: the path asked for, the start
/// of its `Range` (0 without one), and the connection to answer on.
type Answer = dyn Fn(&str, u64, &mut TcpStream) + Send + Sync;

struct Server {
    base: String,
    /// Requests read so far.
    requests: Arc<AtomicUsize>,
}

fn serve(answer: impl Fn(&str, u64, &mut TcpStream) + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let answer: Arc<Answer> = Arc::new(answer);
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let answer = Arc::clone(&answer);
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let mut stream = stream;
                let Some((path, from)) = read_request(&stream) else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                answer(&path, from, &mut stream);
            });
        }
    });
    Server { base, requests }
}

/// The request's path and the start of its `Range: bytes=N-`.
fn read_request(stream: &TcpStream) -> Option<(String, u64)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut first = String::new();
    reader.read_line(&mut first).ok()?;
    let path = first.split_whitespace().nth(1)?.to_string();
    let mut from = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            return Some((path, from));
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                from = v
                    .trim()
                    .trim_start_matches("bytes=")
                    .trim_end_matches('-')
                    .parse()
                    .unwrap_or(0);
            }
        }
    }
}

/// `body` from byte `from`: a `206` when `from` > 0, else a `200`.
fn send(stream: &mut TcpStream, body: &[u8], from: u64) {
    let from = (from as usize).min(body.len());
    let head = if from > 0 {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{}/{}\r\nConnection: close\r\n\r\n",
            body.len() - from,
            body.len() - 1,
            body.len()
        )
    } else {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
    };
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body[from..]);
}

/// Holds the connection until the client closes it.
fn hold(stream: &mut TcpStream) {
    let _ = stream.read(&mut [0u8; 1]);
}

fn body() -> Vec<u8> {
    (0..50_000u32).map(|i| (i % 251) as u8).collect()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `f.json`, pinned: its size and SHA-256.
fn pinned(bytes: &[u8]) -> DatasetFile {
    DatasetFile {
        name: "f.json".to_string(),
        size: Some(bytes.len() as u64),
        sha256: Some(sha256(bytes)),
    }
}

/// `f.json` with neither: a first use.
fn unpinned() -> DatasetFile {
    DatasetFile {
        name: "f.json".to_string(),
        size: None,
        sha256: None,
    }
}

fn dataset(base: &str, files: Vec<DatasetFile>) -> Dataset {
    Dataset {
        name: "t".to_string(),
        description: String::new(),
        source: String::new(),
        revision: String::new(),
        base_url: base.to_string(),
        license: None,
        unpinned: None,
        pinned_from: None,
        pinned_by: None,
        files,
    }
}

/// A fresh directory for `test`, holding `dir` (the fetch's) and `outside`.
fn scratch(test: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("arbor-fetch-it-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (dir, outside) = (root.join("dir"), root.join("outside"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    (dir, outside)
}

/// Waits 1 s at most; the least rate as by default.
fn options() -> FetchOptions {
    FetchOptions {
        timeout: Duration::from_secs(1),
        ..FetchOptions::default()
    }
}

/// The observer: each mismatch it was told of.
#[derive(Default, Clone)]
struct Seen {
    mismatches: Arc<Mutex<Vec<String>>>,
}

impl FetchObserver for Seen {
    fn progress(&self, _: u64) {}

    fn mismatch(&self, file: &str, got: &str, _: &str) {
        self.mismatches
            .lock()
            .unwrap()
            .push(format!("{file} {got}"));
    }

    fn fetched(&self, _: &str, _: &Fetched) {}
}

/// `fetch` on a thread of its own, bounded by [`OUTER`].
fn fetch_bounded(
    dataset: Dataset,
    dir: &Path,
    options: FetchOptions,
) -> (Result<Vec<DatasetFile>, Error>, Seen) {
    let seen = Seen::default();
    let (tx, rx) = mpsc::channel();
    let (dir, observer) = (dir.to_path_buf(), seen.clone());
    std::thread::spawn(move || {
        let _ = tx.send(fetch(&dataset, &dir, &options, &observer));
    });
    let result = rx
        .recv_timeout(OUTER)
        .unwrap_or_else(|_| panic!("the fetch did not return within {OUTER:?}"));
    (result, seen)
}

fn error(result: Result<Vec<DatasetFile>, Error>) -> Error {
    match result {
        Ok(files) => panic!("expected an error, fetched {files:?}"),
        Err(e) => e,
    }
}

#[cfg(unix)]
#[test]
fn a_part_symlinked_out_of_the_directory_is_refused_and_its_target_untouched() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, outside) = scratch("part-link");
    let victim = outside.join("victim");
    std::fs::write(&victim, b"precious bytes").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("f.json.part")).unwrap();
    let (result, _) = fetch_bounded(dataset(&server.base, vec![pinned(&whole)]), &dir, options());
    let e = error(result);
    assert!(
        e.message
            .contains("f.json.part: a symbolic link: refusing it"),
        "{e}"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious bytes");
    assert_eq!(server.requests.load(Ordering::SeqCst), 0);
    assert!(!dir.join("f.json").exists());
}

#[cfg(unix)]
#[test]
fn a_dangling_part_link_of_a_first_use_creates_nothing_outside() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, outside) = scratch("dangling-link");
    let target = outside.join("created");
    std::os::unix::fs::symlink(&target, dir.join("f.json.part")).unwrap();
    let (result, _) = fetch_bounded(dataset(&server.base, vec![unpinned()]), &dir, options());
    let e = error(result);
    assert!(e.message.contains("a symbolic link"), "{e}");
    assert!(!target.exists(), "written outside the directory");
}

#[cfg(unix)]
#[test]
fn a_link_in_place_of_the_file_is_refused_unread() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, outside) = scratch("dest-link");
    let victim = outside.join("victim");
    std::fs::write(&victim, b"precious bytes").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("f.json")).unwrap();
    let (result, seen) =
        fetch_bounded(dataset(&server.base, vec![pinned(&whole)]), &dir, options());
    let e = error(result);
    assert!(e.message.contains("f.json: a symbolic link"), "{e}");
    assert!(
        seen.mismatches.lock().unwrap().is_empty(),
        "the victim was hashed"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious bytes");
}

#[cfg(unix)]
#[test]
fn a_hard_linked_part_is_refused_and_its_other_name_untouched() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, outside) = scratch("part-hard-link");
    let victim = outside.join("victim");
    std::fs::write(&victim, b"precious bytes").unwrap();
    std::fs::hard_link(&victim, dir.join("f.json.part")).unwrap();
    let (result, _) = fetch_bounded(dataset(&server.base, vec![pinned(&whole)]), &dir, options());
    let e = error(result);
    assert!(e.message.contains("other hard links"), "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious bytes");
}

#[test]
fn a_file_name_that_leaves_the_directory_is_refused_before_any_request() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, outside) = scratch("names");
    let escape = outside.join("escape.json");
    for name in [
        "../outside/escape.json".to_string(),
        escape.display().to_string(),
        String::new(),
        "..".to_string(),
    ] {
        let file = DatasetFile {
            name: name.clone(),
            ..unpinned()
        };
        let (result, _) = fetch_bounded(dataset(&server.base, vec![file]), &dir, options());
        let e = error(result);
        assert_eq!(e.kind, Kind::Input, "{name}: {e}");
        assert!(e.message.contains("expected a plain file name"), "{e}");
    }
    assert_eq!(server.requests.load(Ordering::SeqCst), 0);
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
}

#[test]
fn a_server_that_stalls_after_the_head_is_an_error_and_the_part_resumes() {
    let whole = body();
    let served = whole.clone();
    let first = AtomicUsize::new(0);
    let server = serve(move |_, from, stream| {
        if first.fetch_add(1, Ordering::SeqCst) > 0 {
            return send(stream, &served, from);
        }
        // The whole file announced, half of it sent, then nothing.
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            served.len()
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&served[..20_000]);
        let _ = stream.flush();
        hold(stream);
    });
    let (dir, _) = scratch("stall-body");
    let entry = dataset(&server.base, vec![pinned(&whole)]);
    let (result, _) = fetch_bounded(entry.clone(), &dir, options());
    let e = error(result);
    let url = format!("{}f.json", server.base);
    assert!(
        e.message.contains(&url) && e.message.contains("no byte for 1 s at byte 20000"),
        "{e}"
    );
    assert!(e.message.contains("kept"), "{e}");
    assert_eq!(
        std::fs::read(dir.join("f.json.part")).unwrap(),
        &whole[..20_000]
    );
    // Pinned, so the bytes so far are resumed and the whole verified.
    let (result, _) = fetch_bounded(entry, &dir, options());
    assert!(result.is_ok(), "{:?}", result.err());
    assert_eq!(std::fs::read(dir.join("f.json")).unwrap(), whole);
}

#[test]
fn a_stalled_first_use_keeps_nothing() {
    let server = serve(|_, _, stream| {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"partial\":");
        let _ = stream.flush();
        hold(stream);
    });
    let (dir, _) = scratch("stall-first-use");
    let (result, _) = fetch_bounded(dataset(&server.base, vec![unpinned()]), &dir, options());
    let e = error(result);
    assert!(
        e.message.contains("no byte for 1 s") && e.message.contains("discarded"),
        "{e}"
    );
    assert!(!dir.join("f.json.part").exists());
    assert!(!dir.join("f.json").exists());
}

#[test]
fn a_server_that_never_answers_is_an_error_naming_the_url() {
    let server = serve(|_, _, stream| hold(stream));
    let (dir, _) = scratch("no-head");
    let whole = body();
    let (result, _) = fetch_bounded(dataset(&server.base, vec![pinned(&whole)]), &dir, options());
    let e = error(result);
    assert!(
        e.message.contains(&format!("{}f.json", server.base))
            && e.message.contains("no response head within 1 s"),
        "{e}"
    );
}

#[test]
fn a_server_that_drips_is_a_stall() {
    // A byte every 100 ms: never a second without one, far under 1 KiB/s.
    let server = serve(|_, _, stream| {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 50000\r\nConnection: close\r\n\r\n");
        for _ in 0..600 {
            if stream.write_all(b"x").and_then(|_| stream.flush()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (dir, _) = scratch("drip");
    let whole = body();
    let (result, _) = fetch_bounded(dataset(&server.base, vec![pinned(&whole)]), &dir, options());
    let e = error(result);
    assert!(
        e.message.contains(&format!("{}f.json", server.base))
            && e.message.contains("under the least rate of 1024 bytes/s"),
        "{e}"
    );
}

/// A body of no announced length, 16 MiB (the client's cap is 1 MiB),
/// 64 KiB at a time; then the connection closes. Bounded so that, without
/// the cap, the fetch ends (and the test fails) at once, not a disk later.
fn sixteen_mib(stream: &mut TcpStream) {
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
    let chunk = vec![b'x'; 64 << 10];
    for _ in 0..256 {
        if stream.write_all(&chunk).is_err() {
            return;
        }
    }
}

#[test]
fn a_file_of_no_size_is_capped_and_discarded() {
    let server = serve(|_, _, stream| sixteen_mib(stream));
    let (dir, _) = scratch("cap");
    let options = FetchOptions {
        max_bytes: 1 << 20,
        ..options()
    };
    let (result, _) = fetch_bounded(dataset(&server.base, vec![unpinned()]), &dir, options);
    let e = error(result);
    assert!(
        e.message
            .contains("the server sent more than --max-bytes (1 MiB)"),
        "{e}"
    );
    assert!(!dir.join("f.json.part").exists());
    assert!(!dir.join("f.json").exists());
}

#[test]
fn an_announced_length_over_the_cap_is_refused_before_the_body() {
    let server = serve(|_, _, stream| {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\nConnection: close\r\n\r\n");
        hold(stream);
    });
    let (dir, _) = scratch("cap-announced");
    let options = FetchOptions {
        max_bytes: 1 << 20,
        ..options()
    };
    let (result, _) = fetch_bounded(dataset(&server.base, vec![unpinned()]), &dir, options);
    let e = error(result);
    assert!(
        e.message
            .contains("the server announces 10485760 bytes, over --max-bytes (1 MiB)"),
        "{e}"
    );
    assert!(!dir.join("f.json.part").exists());
}

#[test]
fn a_hash_without_a_size_is_a_first_use_checked_against_the_hash() {
    let whole = body();
    let served = whole.clone();
    let server = serve(move |_, from, stream| send(stream, &served, from));
    let (dir, _) = scratch("hash-no-size");
    let file = DatasetFile {
        size: None,
        ..pinned(&whole)
    };
    let entry = dataset(&server.base, vec![file]);
    assert!(arbor_backends::fetch::is_first_use(&entry));
    let (result, _) = fetch_bounded(entry.clone(), &dir, options());
    let files = result.unwrap();
    assert_eq!(files[0].size, Some(whole.len() as u64));
    assert_eq!(files[0].sha256.as_deref(), Some(sha256(&whole).as_str()));
    // A wrong hash is still refused, whatever the size.
    std::fs::remove_file(dir.join("f.json")).unwrap();
    let wrong = DatasetFile {
        name: "f.json".to_string(),
        size: None,
        sha256: Some("0".repeat(64)),
    };
    let (result, _) = fetch_bounded(dataset(&server.base, vec![wrong]), &dir, options());
    assert!(error(result).message.contains("SHA-256 mismatch"));
    assert!(!dir.join("f.json.part").exists());
}
