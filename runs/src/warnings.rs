//! What the reader of a finished run must be told before its figures:
//! the failures by class with the server's own words, outputs shorter
//! than planned, and answers under another model's name. Pure: read off
//! what the records added up to ([`Measured`]) as the summary is built;
//! `summary.json` keeps the lines (`warnings`), and the console and the
//! report page show them first.

use crate::collector::Measured;
use crate::recipe::SHORT_OUTPUT_LIMIT;
use crate::record::in_words;

/// The failures in words: `3 of 40 measured requests failed: http_status
/// 3 (the first: HTTP 404: ...)`; `None` when none failed.
pub fn failures(m: &Measured) -> Option<String> {
    if m.errors.is_empty() {
        return None;
    }
    let classes: Vec<String> = m
        .errors
        .iter()
        .map(|(class, n)| match m.error_samples.get(class) {
            Some(sample) => format!(
                "{class} {n} (the first: {})",
                in_words(sample.http_status, &sample.message)
            ),
            None => format!("{class} {n}"),
        })
        .collect();
    Some(format!(
        "{} of {} measured requests failed: {}",
        m.requests.failed,
        m.requests.dispatched,
        classes.join("; ")
    ))
}

/// Every warning of a run, most serious first: the failures, short
/// outputs above [`SHORT_OUTPUT_LIMIT`] of the measured ones, answers
/// under another model's name than `asked`.
pub fn of(m: &Measured, asked: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = failures(m).into_iter().collect();
    let tokens = &m.tokens;
    let measured = tokens.measured_outputs();
    if tokens.short_output_share() > SHORT_OUTPUT_LIMIT {
        out.push(format!(
            "{} of {} measured outputs were shorter than planned ({:.1} %; {} tokens received \
             of {} planned): the server stopped early, so the run did less work than its plan. \
             Check that it honours max_tokens and ignore_eos (`arbor doctor` tells)",
            tokens.short_outputs,
            measured,
            tokens.short_output_share() * 100.0,
            tokens.received_output_tokens,
            tokens.planned_output_tokens,
        ));
    }
    if !m.answered_models.is_empty() {
        let names: Vec<String> = m
            .answered_models
            .iter()
            .map(|(name, n)| format!("`{name}` {n}"))
            .collect();
        let asked = asked.unwrap_or("?");
        out.push(format!(
            "the server answered under another model's name than `{asked}`, the one asked for: \
             {} (requests by the name answered); the figures may describe another model",
            names.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::{Collector, ErrorSample};

    /// What 100 ok requests with measured outputs add up to.
    fn measured() -> Measured {
        let mut m = Collector::new().finish();
        m.requests.dispatched = 100;
        m.requests.ok = 100;
        m.tokens.output_source.usage = 100;
        m
    }

    #[test]
    fn a_clean_run_has_no_warning() {
        assert!(of(&measured(), Some("m")).is_empty());
    }

    #[test]
    fn failures_lead_with_the_servers_own_words() {
        let mut m = measured();
        m.requests.failed = 3;
        m.requests.dispatched = 103;
        m.errors.insert("http_status".into(), 3);
        m.error_samples.insert(
            "http_status".into(),
            ErrorSample {
                http_status: Some(404),
                message: "The model llama-3-8b does not exist".into(),
            },
        );
        m.tokens.short_outputs = 100;
        let w = of(&m, Some("m"));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "3 of 103 measured requests failed: http_status 3 (the first: HTTP \
                 404: The model llama-3-8b does not exist)"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[1].contains("100 of 100 measured outputs were shorter"),
            "{}",
            w[1]
        );
    }

    #[test]
    fn short_outputs_warn_only_above_the_limit() {
        let mut m = measured();
        // 1 % of the measured outputs: no warning; one more: a warning.
        m.tokens.short_outputs = 1;
        assert!(of(&m, None).is_empty());
        m.tokens.short_outputs = 2;
        assert_eq!(of(&m, None).len(), 1);
    }

    #[test]
    fn another_models_answers_are_named() {
        let mut m = measured();
        m.answered_models.insert("llama-3-70b".into(), 5);
        let w = of(&m, Some("llama-3-8b"));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("than `llama-3-8b`"), "{}", w[0]);
        assert!(w[0].contains("`llama-3-70b` 5"), "{}", w[0]);
    }
}
