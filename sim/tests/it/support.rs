//! A small SSE client for the tests: timestamps each network read and
//! splits `data:` events itself.

use std::time::Duration;

use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorHandle, REQUEST_ID_HEADER};
use serde_json::Value;
use tokio::time::Instant;

/// Held by the tests that load the machine (hundreds of streams) and by
/// those that measure sub-millisecond pacing, so the two never run
/// together on a small machine.
pub static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub async fn start(config: EmulatorConfig) -> EmulatorHandle {
    serve(config, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("emulator starts")
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// One SSE event as the client saw it.
#[derive(Debug, Clone)]
pub struct Event {
    /// Time from just before sending the request to the read that
    /// completed the event.
    pub at: Duration,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
    /// The token text of a content chunk (chat delta or completion text).
    pub fn content(&self) -> Option<String> {
        let v = self.json()?;
        let choice = v["choices"].get(0)?;
        let text = choice["delta"]["content"]
            .as_str()
            .or_else(|| choice["text"].as_str())?;
        (!text.is_empty()).then(|| text.to_string())
    }
}

#[derive(Debug)]
pub struct StreamResult {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub events: Vec<Event>,
    /// Body text of a non-SSE response.
    pub body: String,
    pub done: bool,
    /// The body ended with an error (the connection closed mid-stream).
    pub cut: bool,
}

impl StreamResult {
    pub fn content(&self) -> Vec<(Duration, String)> {
        self.events
            .iter()
            .filter_map(|e| e.content().map(|c| (e.at, c)))
            .collect()
    }
    pub fn usage(&self) -> Option<Value> {
        self.events
            .iter()
            .filter_map(|e| e.json())
            .find(|v| v.get("usage").is_some_and(|u| !u.is_null()))
            .map(|v| v["usage"].clone())
    }
}

/// Posts `body` to `path` and reads the whole response, stamping each
/// network read.
pub async fn post(
    client: &reqwest::Client,
    emulator: &EmulatorHandle,
    path: &str,
    body: &Value,
    request_id: Option<&str>,
) -> StreamResult {
    let mut req = client
        .post(format!("{}{}", emulator.base_url(), path))
        .json(body);
    if let Some(id) = request_id {
        req = req.header(REQUEST_ID_HEADER, id);
    }
    let sent = Instant::now();
    let mut resp = req.send().await.expect("response head");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut buf: Vec<u8> = Vec::new();
    let mut raw: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut done = false;
    let mut cut = false;
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => {
                let at = sent.elapsed();
                raw.extend_from_slice(&bytes);
                buf.extend_from_slice(&bytes);
                while let Some(pos) = buf.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = buf.drain(..pos + 2).collect();
                    let text = String::from_utf8(event).expect("utf-8");
                    for line in text.lines() {
                        if let Some(data) = line.strip_prefix("data: ") {
                            if data == "[DONE]" {
                                done = true;
                            }
                            events.push(Event {
                                at,
                                data: data.to_string(),
                            });
                        }
                    }
                }
            }
            Ok(None) => break,
            Err(_) => {
                cut = true;
                break;
            }
        }
    }
    StreamResult {
        status,
        headers,
        events,
        body: String::from_utf8_lossy(&raw).into_owned(),
        done,
        cut,
    }
}

pub fn chat(content: &str, max_tokens: u32) -> Value {
    serde_json::json!({
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
