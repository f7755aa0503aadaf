//! The model a run asks for when `--model` is not given: the first id of
//! the server's `GET /v1/models`, read under caps (the answer at most
//! [`MODELS_BODY_CAP`] bytes, read chunk by chunk; the id at most
//! [`MODEL_ID_CAP`] bytes), so a hostile server cannot make the client
//! allocate without bound or put megabytes into stdout and
//! `summary.json`. Every URL in its errors is redacted.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use arbor_backends::endpoint::{
    at, first_model_id, read_capped, redact_url, without_url, MODELS_BODY_CAP, MODEL_ID_CAP,
};
use arbor_error::Error;

/// The first model id the server lists at `/v1/models`.
pub async fn discover(
    client: &reqwest::Client,
    endpoint: &str,
    headers: &HeaderMap,
) -> Result<String, Error> {
    let url = at(endpoint, "/v1/models");
    let shown = redact_url(&url);
    let response = client
        .get(&url)
        .headers(headers.clone())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| {
            Error::other(format!(
                "cannot ask {shown} for the model (pass --model to skip): {}",
                without_url(&e)
            ))
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(Error::other(format!(
            "{shown} answered HTTP {}: pass --model M",
            status.as_u16()
        )));
    }
    let body = read_capped(response, MODELS_BODY_CAP)
        .await
        .map_err(|why| Error::other(format!("{shown}: {why}: pass --model M")))?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| {
        Error::other(format!(
            "{shown} did not answer with JSON ({e}): pass --model M"
        ))
    })?;
    let id = first_model_id(&body).ok_or_else(|| {
        Error::other(format!(
            "{shown} lists no models (expected {{\"data\":[{{\"id\":...}}]}}): pass --model M"
        ))
    })?;
    if id.len() > MODEL_ID_CAP {
        return Err(Error::other(format!(
            "{shown}: the first model id is {} bytes, over the {MODEL_ID_CAP}-byte cap on a \
             model id: pass --model M",
            id.len()
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// Serves one scripted answer to the first connection, on a thread;
    /// returns the base URL.
    fn scripted(head: &'static str, body: Vec<u8>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut conn, _)) = listener.accept() {
                let mut request = [0u8; 4096];
                let _ = conn.read(&mut request);
                let _ = conn.write_all(head.as_bytes());
                // A closed socket on the client's side ends the write.
                for chunk in body.chunks(64 * 1024) {
                    if conn.write_all(chunk).is_err() {
                        break;
                    }
                }
            }
        });
        format!("http://{addr}")
    }

    fn discover_from(base: &str) -> Result<String, Error> {
        let runtime = crate::runtime::client().ok().unwrap();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        runtime.block_on(discover(&client, base, &HeaderMap::new()))
    }

    const CLOSE_DELIMITED: &str =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";

    #[test]
    fn a_listed_model_is_taken() {
        let base = scripted(CLOSE_DELIMITED, br#"{"data":[{"id":"m1"}]}"#.to_vec());
        assert_eq!(discover_from(&base).ok().as_deref(), Some("m1"));
    }

    #[test]
    fn an_endless_answer_stops_at_the_body_cap() {
        // 4 MiB of an id that never ends, with no length announced.
        let mut body = br#"{"data":[{"id":""#.to_vec();
        body.resize(4 << 20, b'a');
        let base = scripted(CLOSE_DELIMITED, body);
        let failure = discover_from(&base).err().unwrap();
        assert!(
            failure.message.contains("longer than the 1048576-byte cap"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn a_long_model_id_is_refused_naming_the_cap() {
        let id = "x".repeat(600);
        let body = format!(r#"{{"data":[{{"id":"{id}"}}]}}"#).into_bytes();
        let base = scripted(CLOSE_DELIMITED, body);
        let failure = discover_from(&base).err().unwrap();
        assert!(
            failure.message.contains("600 bytes, over the 512-byte cap"),
            "{}",
            failure.message
        );
        assert!(!failure.message.contains(&id));
    }
}
