//! Hides the secrets (the API keys, secret header values) wherever a
//! report holds text: the endpoint, the command, every finding, the model
//! names.

use super::report::Report;

/// Replaces every secret in the report's text by `<redacted>`.
pub(crate) fn scrub(report: &mut Report, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    let clean = |text: &mut String| {
        for s in secrets {
            if text.contains(s.as_str()) {
                *text = text.replace(s.as_str(), "<redacted>");
            }
        }
    };
    clean(&mut report.endpoint);
    clean(&mut report.command);
    for f in &mut report.findings {
        clean(&mut f.seen);
        if let Some(a) = &mut f.action {
            clean(a);
        }
    }
    for m in &mut report.models {
        clean(m);
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Status;
    use super::*;

    #[test]
    fn secrets_are_scrubbed_from_every_text() {
        let mut report = Report::default();
        report.push(
            "health",
            Status::Fail,
            "saw sk-secret",
            Some("not sk-secret".into()),
        );
        report.command = "x sk-secret".into();
        scrub(&mut report, &["sk-secret".to_string()]);
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("sk-secret"), "{text}");
    }
}
