//! The recording proxy's options checked before anything is created or
//! bound: a bad upstream or session header is the caller's fault (exit 2),
//! the observer hears nothing and no capture file is made.

use std::cell::Cell;
use std::net::SocketAddr;

use arbor_backends::live::tls::TlsOptions;
use arbor_backends::record::{record, RecordObserver, RecordOptions};
use arbor_error::Error;

#[derive(Default)]
struct Heard(Cell<usize>);

impl RecordObserver for Heard {
    fn listening(&self, _: SocketAddr, _: &str) -> Result<(), Error> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }

    fn stopping(&self, _: SocketAddr) {
        self.0.set(self.0.get() + 1);
    }
}

fn options(upstream: &str, session_header: Option<&str>, test: &str) -> RecordOptions {
    RecordOptions {
        upstream: upstream.to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        out: std::env::temp_dir().join(format!(
            "arbor-record-options-{test}-{}.jsonl",
            std::process::id()
        )),
        session_header: session_header.map(str::to_string),
        redact: false,
        tls: TlsOptions::default(),
    }
}

#[test]
fn a_bad_upstream_or_session_header_is_refused_before_anything_starts() {
    let cases = [
        (
            options("http://127.0.0.1:9/?key=secret", None, "query"),
            "a query string is not forwarded",
        ),
        (
            options("http://127.0.0.1:9", Some("bad header"), "header"),
            "--session-header `bad header` is not a header name",
        ),
    ];
    for (options, said) in cases {
        let heard = Heard::default();
        let e = record(&options, &heard).unwrap_err();
        assert!(e.is_input(), "{e}");
        assert!(e.message.contains(said), "{e}");
        assert!(!e.message.contains("secret"), "{e}");
        assert_eq!(heard.0.get(), 0);
        assert!(!options.out.exists());
    }
}
