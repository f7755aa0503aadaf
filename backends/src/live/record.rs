//! How a live request's failures are classed: the server's words for a
//! context overflow or an overload, and the client's own resource errors.
//!
//! The record itself (its stamps, the figures derived from them and the
//! line of `records.jsonl`) is `arbor_runs::record`'s.

use arbor_runs::record::ErrorCategory;

/// Does an error message say the prompt is too long for the model?
/// (vLLM, SGLang, llama.cpp, OpenAI and Anthropic phrasings.)
pub fn is_context_overflow(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "context length",
        "maximum context",
        "context_length_exceeded",
        "prompt is too long",
        "exceeds the context",
        "context window",
        "too many tokens",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// Is this failure to open a connection the client's own (out of file
/// descriptors, buffers, memory or ephemeral ports) rather than the
/// server's? Such a request is classed [`ErrorCategory::Client`].
pub fn is_client_resource(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::EADDRNOTAVAIL)
    )
}

/// The HTTP status an overloaded Anthropic-style server answers with.
pub const OVERLOADED_STATUS: u16 = 529;

/// The class of an error message (`kind` is the error's type where the
/// API names one, such as Anthropic's `overloaded_error`): context overflow
/// and overload are told apart from `otherwise`.
pub fn classify_message(
    kind: Option<&str>,
    message: &str,
    otherwise: ErrorCategory,
) -> ErrorCategory {
    if is_context_overflow(message) {
        ErrorCategory::ContextOverflow
    } else if kind == Some("overloaded_error") || message.contains("overloaded_error") {
        ErrorCategory::Overloaded
    } else {
        otherwise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_messages_are_recognised() {
        assert!(is_context_overflow(
            "This model's maximum context length is 8192 tokens. However, you requested 9000"
        ));
        assert!(is_context_overflow(
            "prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(is_context_overflow(
            "{\"code\":\"context_length_exceeded\"}"
        ));
        assert!(!is_context_overflow("Internal Server Error"));
    }

    #[test]
    fn overload_has_its_own_class() {
        let other = ErrorCategory::ServerError;
        assert_eq!(
            classify_message(Some("overloaded_error"), "Overloaded", other),
            ErrorCategory::Overloaded
        );
        assert_eq!(
            classify_message(
                None,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorCategory::HttpStatus
            ),
            ErrorCategory::Overloaded
        );
        assert_eq!(
            classify_message(
                Some("invalid_request_error"),
                "prompt is too long: 9 tokens > 8 maximum",
                other
            ),
            ErrorCategory::ContextOverflow
        );
        assert_eq!(classify_message(Some("api_error"), "boom", other), other);
        assert_eq!(ErrorCategory::Overloaded.as_str(), "overloaded");
    }

    #[test]
    fn the_clients_own_resource_errors_are_told_apart() {
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::ENOBUFS,
            libc::ENOMEM,
            libc::EADDRNOTAVAIL,
        ] {
            let e = std::io::Error::from_raw_os_error(errno);
            assert!(is_client_resource(&e), "{e}");
        }
        for errno in [libc::ECONNREFUSED, libc::ECONNRESET, libc::ETIMEDOUT] {
            assert!(!is_client_resource(&std::io::Error::from_raw_os_error(
                errno
            )));
        }
        assert!(!is_client_resource(&std::io::ErrorKind::Other.into()));
        assert_eq!(ErrorCategory::Client.as_str(), "client");
        assert_eq!(ErrorCategory::Oversized.as_str(), "oversized");
        let json = serde_json::to_string(&ErrorCategory::Client).unwrap();
        assert_eq!(json, "\"client\"", "the CLI matches the serialized name");
    }
}
