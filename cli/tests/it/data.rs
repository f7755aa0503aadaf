//! `arbor data`: fetching from a loopback HTTP server (resume after a
//! kill mid-file, a wrong hash, a server that lies about its length or
//! stalls, a corrupted file in place, a file of no size), `data:NAME`
//! inputs, and the AgentX recipe's pinned-corpus check. Nothing here
//! leaves 127.0.0.1. The fetch's own cases (links in the directory, every
//! kind of stall, the cap) are `backends/tests/it/fetch.rs`; these check
//! the flags reach it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{expect_exit_2, fixture, output_within, scratch, stderr, AGENTX_SHORT};

const BIG: &str = "trace_0277.json";
const SMALL: &str = "trace_0187.json";

/// How the server answers.
struct Behaviour {
    /// The first full (non-Range) GET of BIG sends this many bytes, then
    /// holds the connection open (to be killed); 0: never.
    cut_big_at: AtomicU64,
    /// Added to the announced Content-Length of every 200.
    lie_by: u64,
    /// Answer a `Range` request with the whole file (200), as a server
    /// without range support does.
    ignore_range: bool,
    /// Send every file with its first byte changed (a source that changed
    /// after a first use).
    tamper: AtomicBool,
}

/// Every request's path and `Range` header, in order.
type Seen = Mutex<Vec<(String, Option<String>)>>;

/// A loopback HTTP/1.1 server of the fixture files: honours
/// `Range: bytes=N-`; records every request's path and Range header.
struct Server {
    base: String,
    seen: Arc<Seen>,
    behaviour: Arc<Behaviour>,
}

fn serve(behaviour: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let behaviour = Arc::new(behaviour);
    let log = Arc::clone(&seen);
    let served = Arc::clone(&behaviour);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            let behaviour = Arc::clone(&served);
            std::thread::spawn(move || answer(stream, &behaviour, &log));
        }
    });
    Server {
        base,
        seen,
        behaviour,
    }
}

fn answer(mut stream: TcpStream, behaviour: &Behaviour, log: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    log.lock().unwrap().push((path.clone(), range.clone()));
    let name = path.trim_start_matches('/');
    let Ok(mut body) = std::fs::read(fixture(name)) else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    if behaviour.tamper.load(Ordering::SeqCst) {
        body[0] ^= 0x20;
    }
    let start: usize = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse().ok())
        .unwrap_or(0);
    let total = body.len();
    if start > 0 && !behaviour.ignore_range {
        let head = format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{}/{total}\r\nConnection: close\r\n\r\n",
            total - start,
            total - 1
        );
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&body[start..]);
        return;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        total as u64 + behaviour.lie_by
    );
    let _ = stream.write_all(head.as_bytes());
    let cut = behaviour.cut_big_at.swap(0, Ordering::SeqCst);
    if name == BIG && cut > 0 {
        let _ = stream.write_all(&body[..cut as usize]);
        let _ = stream.flush();
        // Held open until the client is killed.
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let _ = stream.write_all(&body);
}

/// A registry of `files` (name, sha256) served from `base`, and the
/// environment that points arbor at it with its own cache and config.
struct Env {
    dir: PathBuf,
    vars: BTreeMap<&'static str, PathBuf>,
}

fn sha256(name: &str) -> String {
    let out = Command::new("sha256sum")
        .arg(fixture(name))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn env(test: &str, base: &str, files: &[(&str, String)]) -> Env {
    let dir = scratch(test);
    let mut text = format!("[[dataset]]\nname = \"weka\"\nsource = \"test\"\nrevision = \"r1\"\nbase_url = \"{base}\"\n");
    for (name, hash) in files {
        let size = std::fs::metadata(fixture(name)).unwrap().len();
        text.push_str(&format!(
            "[[dataset.files]]\nname = \"{name}\"\nsize = {size}\nsha256 = \"{hash}\"\n"
        ));
    }
    let registry = dir.join("registry.toml");
    std::fs::write(&registry, text).unwrap();
    let mut vars = BTreeMap::new();
    vars.insert("ARBOR_DATA_REGISTRY", registry);
    vars.insert("XDG_CACHE_HOME", dir.join("cache"));
    vars.insert("XDG_CONFIG_HOME", dir.join("config"));
    Env { dir, vars }
}

impl Env {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_arbor"));
        c.args(args).envs(&self.vars);
        c
    }

    fn arbor(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("arbor runs")
    }

    fn fetched(&self) -> PathBuf {
        self.dir.join("cache/arbor/datasets/weka")
    }
}

fn no_panic(out: &Output) -> String {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn a_server_that_ignores_the_range_restarts_the_file_and_says_so() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: true,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-no-range", &server.base, &[(BIG, sha256(BIG))]);
    // A `.part` of the first 100,000 bytes, as a killed fetch leaves.
    std::fs::create_dir_all(env.fetched()).unwrap();
    let whole = std::fs::read(fixture(BIG)).unwrap();
    std::fs::write(env.fetched().join(format!("{BIG}.part")), &whole[..100_000]).unwrap();
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the server ignored the range: downloaded again from byte 0 (100000 bytes of .part dropped), verified"),
        "{err}"
    );
    assert!(!err.contains("resumed at byte"), "{err}");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.last().unwrap().1.as_deref(), Some("bytes=100000-"));
    assert_eq!(std::fs::read(env.fetched().join(BIG)).unwrap(), whole);
}

#[test]
fn fetch_resumes_after_being_killed_mid_file() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(100_000),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-resume", &server.base, &[(BIG, sha256(BIG))]);
    let mut child = env
        .command(&["data", "fetch", "weka"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let part = env.fetched().join(format!("{BIG}.part"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < 100_000 {
        assert!(Instant::now() < deadline, "no partial download appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !env.fetched().join(BIG).exists(),
        "nothing unverified in place"
    );

    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resumed at byte 100000"), "{err}");
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.last().unwrap().1.as_deref(), Some("bytes=100000-"));
    assert_eq!(
        std::fs::read(env.fetched().join(BIG)).unwrap(),
        std::fs::read(fixture(BIG)).unwrap()
    );
    assert!(!part.exists());

    // Fetched again: verified in place, no request.
    let before = server.seen.lock().unwrap().len();
    let out = env.arbor(&["data", "fetch", "weka"]);
    assert!(out.status.success());
    assert!(no_panic(&out).contains("verified, already in place"));
    assert_eq!(server.seen.lock().unwrap().len(), before);
}

#[test]
fn a_wrong_hash_names_the_file_and_both_hashes_and_nothing_is_kept() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let wrong = "0".repeat(64);
    let env = env("data-wrong-hash", &server.base, &[(SMALL, wrong.clone())]);
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for needle in [SMALL, wrong.as_str(), sha256(SMALL).as_str()] {
        assert!(err.contains(needle), "{needle} in {err}");
    }
    assert!(!env.fetched().join(SMALL).exists());
    assert!(!env.fetched().join(format!("{SMALL}.part")).exists());
}

#[test]
fn a_server_that_lies_about_its_length_is_refused_by_file() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 100,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-lying-length", &server.base, &[(SMALL, sha256(SMALL))]);
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(SMALL) && err.contains("2938"), "{err}");
    assert!(!env.fetched().join(SMALL).exists());
}

#[test]
fn a_corrupted_file_in_place_is_fetched_again() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-corrupted", &server.base, &[(SMALL, sha256(SMALL))]);
    std::fs::create_dir_all(env.fetched()).unwrap();
    std::fs::write(env.fetched().join(SMALL), b"{}").unwrap();
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("fetching it again"), "{err}");
    assert_eq!(
        std::fs::read(env.fetched().join(SMALL)).unwrap(),
        std::fs::read(fixture(SMALL)).unwrap()
    );
}

fn all_four() -> Vec<(&'static str, String)> {
    ["trace_0187.json", BIG, "trace_0291.json", "trace_0504.json"]
        .into_iter()
        .map(|n| (n, sha256(n)))
        .collect()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(out)))
}

#[test]
fn data_name_is_an_input_once_fetched() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-input", &server.base, &all_four());
    let out = env.arbor(&["plan", "data:weka"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(no_panic(&out).contains("arbor data fetch weka"));
    let out = env.arbor(&["plan", "data:nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(no_panic(&out).contains("unknown dataset `nope`"));

    assert!(env.arbor(&["data", "fetch", "weka"]).status.success());
    let by_name = json(&env.arbor(&["plan", "--json", "data:weka"]));
    let by_path = json(&env.arbor(&["plan", "--json", fixture("").to_str().unwrap()]));
    assert_eq!(by_name["corpus"]["files"], 4);
    assert_eq!(by_name["corpus"], by_path["corpus"]);
    assert!(env.arbor(&["inspect", "data:weka"]).status.success());
}

#[test]
fn the_recipe_refuses_an_unpinned_corpus_and_accepts_the_fetched_one() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-scenario", &server.base, &all_four());
    assert!(env.arbor(&["data", "fetch", "weka"]).status.success());
    let pinned = json(&env.arbor(&["plan", "--json", "data:weka"]))["corpus"]["manifest_sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // A local corpus with a different manifest: three of the four files.
    let local = env.dir.join("local");
    std::fs::create_dir_all(&local).unwrap();
    for name in ["trace_0187.json", BIG, "trace_0291.json"] {
        std::fs::copy(fixture(name), local.join(name)).unwrap();
    }
    let local_arg = local.to_str().unwrap();
    let recipe = [
        "plan",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "2",
        "--seed",
        "1",
    ];
    let mut args = recipe.to_vec();
    args.push(local_arg);
    let out = env.arbor(&args);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let local_manifest = json(&env.arbor(&["plan", "--json", local_arg]))["corpus"]
        ["manifest_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&pinned) && err.contains(&local_manifest),
        "{err}"
    );

    // The fetched corpus: accepted, and the full recipe (900 s) is
    // stamped valid; a short run adds no dataset reason.
    let mut args = recipe.to_vec();
    args.push("data:weka");
    assert!(env.arbor(&args).status.success());
    args.push("--json");
    let planned = json(&env.arbor(&args));
    assert_eq!(
        planned["submission"],
        serde_json::json!({"valid_if_completed": true, "invalid_reasons": []})
    );
    let mut overridden = recipe.to_vec();
    overridden.extend([local_arg, "--unsafe-override", "--json"]);
    assert_eq!(
        json(&env.arbor(&overridden))["submission"],
        serde_json::json!({"valid_if_completed": false, "invalid_reasons": ["unpinned_dataset"]})
    );
    let run = |input: &str, out_dir: &Path| -> Value {
        let mut args = vec!["run"];
        args.extend_from_slice(&AGENTX_SHORT);
        args.extend([input, "--no-progress", "--out", out_dir.to_str().unwrap()]);
        let out = env.arbor(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap()
    };
    let fetched = run("data:weka", &env.dir.join("run-fetched"));
    assert_eq!(
        fetched["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override"]),
        "only the short run's own overrides"
    );
    assert_eq!(fetched["config"]["corpus"]["manifest_sha256"], pinned);
    let unpinned = run(local_arg, &env.dir.join("run-local"));
    assert_eq!(
        unpinned["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override", "unpinned_dataset"])
    );

    // Pinned by `arbor data pin`, the local corpus is a local pin under
    // its own name: recorded as one, and still not the registry corpus.
    let out = env.arbor(&["data", "pin", local_arg, "--name", "local-three"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(env.dir.join("config/arbor/datasets.toml").is_file());
    let mut args = recipe.to_vec();
    args.push(local_arg);
    let out = env.arbor(&args);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("it is the local pin local-three"), "{err}");
    assert_eq!(
        json(&env.arbor(&["plan", "--json", "data:local-three"]))["corpus"]["pinned"],
        serde_json::json!({"dataset": "local-three", "how": "local_pin"})
    );
    assert_eq!(
        planned["corpus"]["pinned"],
        serde_json::json!({"dataset": "weka", "how": "registry"})
    );
    // Re-pinning a pinned name with other files is refused.
    let out = env.arbor(&[
        "data",
        "pin",
        fixture("").to_str().unwrap(),
        "--name",
        "local-three",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn data_pin_refuses_a_registry_datasets_name() {
    let env = env("data-pin-registry-name", "http://127.0.0.1:9/", &all_four());
    let out = env.arbor(&[
        "data",
        "pin",
        fixture("").to_str().unwrap(),
        "--name",
        "weka",
    ]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--name weka: a registry dataset's name; a local pin gets a name of its own"),
        "{err}"
    );
    assert!(!env.dir.join("config/arbor/datasets.toml").exists());
    // A user registry that already holds such a pin is refused too.
    let config = env.dir.join("config/arbor");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("datasets.toml"),
        format!(
            "[[dataset]]\nname = \"weka\"\npinned_from = \"/x\"\nfiles = [{{ name = \"{SMALL}\", sha256 = \"{}\" }}]\n",
            sha256(SMALL)
        ),
    )
    .unwrap();
    let out = env.arbor(&["data", "list"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a local pin under a registry dataset's name"),
        "{err}"
    );
}

/// A registry whose one entry `weka` lists `files` by name and size, with
/// no hashes, served from `base`.
fn unpinned_env(test: &str, base: &str, files: &[&str]) -> Env {
    let env = env(test, base, &[]);
    let mut text = format!(
        "[[dataset]]\nname = \"weka\"\nsource = \"test\"\nrevision = \"main\"\nbase_url = \"{base}\"\nunpinned = \"no hashes published\"\n"
    );
    for name in files {
        let size = std::fs::metadata(fixture(name)).unwrap().len();
        text.push_str(&format!(
            "[[dataset.files]]\nname = \"{name}\"\nsize = {size}\n"
        ));
    }
    if files.is_empty() {
        text.push_str("files = []\n");
    }
    std::fs::write(env.dir.join("registry.toml"), text).unwrap();
    env
}

#[test]
fn an_entry_without_hashes_is_pinned_on_first_fetch_and_a_later_change_is_refused() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let names = ["trace_0187.json", BIG, "trace_0291.json", "trace_0504.json"];
    let env = unpinned_env("data-tofu", &server.base, &names);
    // Something already in place is never what a first use trusts.
    std::fs::create_dir_all(env.fetched()).unwrap();
    std::fs::write(env.fetched().join(SMALL), b"{}").unwrap();
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "pinned on first use from {} (trust_on_first_use)",
            server.base
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(env.fetched().join(SMALL)).unwrap(),
        std::fs::read(fixture(SMALL)).unwrap()
    );
    let user = std::fs::read_to_string(env.dir.join("config/arbor/datasets.toml")).unwrap();
    assert!(
        user.contains("pinned_by = \"trust_on_first_use\""),
        "{user}"
    );
    for name in names {
        assert!(user.contains(&sha256(name)), "{name} in {user}");
    }
    // The run records how its corpus was pinned, and the recipe takes it.
    let planned = json(&env.arbor(&[
        "plan",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "2",
        "--seed",
        "1",
        "--json",
        "data:weka",
    ]));
    assert_eq!(
        planned["corpus"]["pinned"],
        serde_json::json!({"dataset": "weka", "how": "trust_on_first_use"})
    );
    assert_eq!(planned["submission"]["valid_if_completed"], true);
    let info = env.arbor(&["data", "info", "weka"]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("pinned by:   trust_on_first_use"));

    // The source changes: a later fetch verifies against the first use's
    // hashes and refuses it, and the pin stays.
    server.behaviour.tamper.store(true, Ordering::SeqCst);
    std::fs::remove_file(env.fetched().join(SMALL)).unwrap();
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("SHA-256 mismatch") && err.contains(&sha256(SMALL)),
        "{err}"
    );
    assert!(!env.fetched().join(SMALL).exists());
    assert_eq!(
        std::fs::read_to_string(env.dir.join("config/arbor/datasets.toml")).unwrap(),
        user
    );
}

#[test]
fn an_entry_without_hashes_or_names_says_a_local_copy_takes_its_own_name() {
    let env = unpinned_env("data-no-names", "https://example.org/d/", &[]);
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--name my-copy") && err.contains("unpinned_dataset"),
        "{err}"
    );
    assert!(!err.contains("--name weka"), "{err}");
}

#[test]
fn a_first_use_is_refused_from_a_plain_http_source() {
    let env = unpinned_env("data-tofu-http", "http://example.org/d/", &[SMALL]);
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not an https source"), "{err}");
}

/// A loopback server answering every request with `reply`, then holding
/// the connection until the client goes: a server that stalls.
fn serve_then_stall(reply: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let base = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 && line.trim() != "" {
                    line.clear();
                }
                let _ = stream.write_all(reply);
                let _ = stream.flush();
                let _ = std::io::Read::read(&mut stream, &mut [0u8; 1]);
            });
        }
    });
    base
}

#[test]
fn a_stalled_fetch_fails_within_its_timeout_naming_the_url() {
    let base =
        serve_then_stall(b"HTTP/1.1 200 OK\r\nContent-Length: 2838\r\nConnection: close\r\n\r\n{");
    let env = env("data-stall", &base, &[(SMALL, sha256(SMALL))]);
    // `--timeout 1`; the outer bound is for a loaded machine (before
    // issue 27, item 16, this fetch never returned).
    let out = output_within(
        &mut env.command(&["data", "fetch", "weka", "--timeout", "1"]),
        Duration::from_secs(60),
    );
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{base}{SMALL}")) && err.contains("no byte for 1 s at byte 1"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(env.fetched().join(format!("{SMALL}.part"))).unwrap(),
        b"{",
        "kept for a resume, the file being pinned"
    );
}

#[test]
fn a_file_of_no_size_is_unpinned_and_capped_by_max_bytes() {
    let server = serve(Behaviour {
        cut_big_at: AtomicU64::new(0),
        lie_by: 0,
        ignore_range: false,
        tamper: AtomicBool::new(false),
    });
    let env = env("data-no-size", &server.base, &[]);
    std::fs::write(
        env.dir.join("registry.toml"),
        format!(
            "[[dataset]]\nname = \"weka\"\nbase_url = \"{}\"\n[[dataset.files]]\nname = \"{SMALL}\"\nsha256 = \"{}\"\n",
            server.base,
            sha256(SMALL)
        ),
    )
    .unwrap();
    let list =
        |env: &Env| String::from_utf8_lossy(&env.arbor(&["data", "list"]).stdout).into_owned();
    assert!(list(&env).contains("unpinned"), "{}", list(&env));
    let out = env.arbor(&["data", "fetch", "weka", "--max-bytes", "1000"]);
    let err = no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("over --max-bytes (1000 bytes)"), "{err}");
    assert!(!env.fetched().join(SMALL).exists());
    assert!(!env.dir.join("config/arbor/datasets.toml").exists());
    // Within the cap (4 GiB by default) it is a first use, checked against
    // the hash it has, and pinned with the size found.
    let out = env.arbor(&["data", "fetch", "weka"]);
    let err = no_panic(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("pinned on first use"), "{err}");
    let user = std::fs::read_to_string(env.dir.join("config/arbor/datasets.toml")).unwrap();
    assert!(user.contains("size = 2838"), "{user}");
    assert!(list(&env).contains("pinned on first use"), "{}", list(&env));
}

#[test]
fn fetch_bounds_must_be_above_zero() {
    expect_exit_2(
        &["data", "fetch", "weka", "--timeout", "0"],
        &["--timeout", "more than 0"],
    );
    expect_exit_2(
        &["data", "fetch", "weka", "--max-bytes", "4GB"],
        &["--max-bytes", "4GiB"],
    );
}
