//! The verdict and the `arbor run` flags the report recommends: the
//! endpoint, the access flags given, the model, `--api messages` or the
//! `--max-tokens-field` that limits the output, `--ignore-eos` when it was
//! accepted, `--max-context` when a workload's largest prompt does not
//! fit; and the command line they make, quoted for a POSIX shell.

use super::report::{Report, Status};

/// Fills in the verdict and the recommended flags.
pub(crate) fn finish(mut report: Report, access_flags: &[String]) -> Report {
    report.usable = report.failed().is_none();
    let mut flags = vec!["--endpoint".to_string(), report.endpoint.clone()];
    flags.extend(access_flags.iter().cloned());
    if let Some(m) = &report.model {
        flags.push("--model".into());
        flags.push(m.clone());
    }
    if report.usable && report.api == Some("messages") {
        flags.push("--api".into());
        flags.push("messages".into());
    }
    if report.usable && report.api != Some("messages") {
        let field = if report.max_tokens_honoured == Some(false)
            && report.max_completion_tokens_honoured == Some(true)
        {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        flags.push("--max-tokens-field".into());
        flags.push(field.into());
        let eos_accepted = report
            .findings
            .iter()
            .any(|f| f.probe == "ignore_eos" && f.status == Status::Ok);
        if eos_accepted {
            flags.push("--ignore-eos".into());
        }
        let too_long = report
            .workload_largest_prompt
            .zip(report.suggested_max_context)
            .is_some_and(|(prompt, cap)| u64::from(prompt) > cap);
        if let (true, Some(cap)) = (too_long, report.suggested_max_context) {
            flags.push("--max-context".into());
            flags.push(cap.to_string());
        }
    }
    let mut command = String::from("arbor run [INPUT...]");
    for f in &flags {
        command.push(' ');
        command.push_str(&shell_word(f));
    }
    report.flags = flags;
    report.command = command;
    report
}

/// A word as a POSIX shell reads it: quoted when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("--ignore-eos"), "--ignore-eos");
        assert_eq!(shell_word("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
        assert_eq!(shell_word("my model"), "'my model'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_server_of_the_messages_api_only_is_run_with_api_messages() {
        let mut report = Report {
            endpoint: "http://h:1".into(),
            model: Some("m".into()),
            streaming: Some(false),
            messages_api: Some(true),
            ..Report::default()
        };
        report.push("streaming", Status::Fail, "no chat", None);
        report.streaming_via_messages();
        report.choose_api();
        let access_flags = ["--api-key-env".to_string(), "MY_KEY".into()];
        let report = finish(report, &access_flags);
        assert!(report.usable);
        assert_eq!(report.api, Some("messages"));
        assert_eq!(
            report.flags,
            [
                "--endpoint",
                "http://h:1",
                "--api-key-env",
                "MY_KEY",
                "--model",
                "m",
                "--api",
                "messages"
            ]
        );
        assert_eq!(report.findings[0].status, Status::Warn);
        assert_eq!(report.findings[1].seen, "streams messages; --api messages");
    }
}
