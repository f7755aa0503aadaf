//! Errors in few words: one line, at most 200 characters
//! ([`short`]), and the innermost cause without the URL reqwest puts in
//! its outer message ([`root_cause`]).

/// An error without the URL reqwest puts in it, one line, short.
pub(crate) fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        let cut: String = one_line.chars().take(200).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

/// The innermost cause of an error (e.g. `Connection refused (os error
/// 111)`), without the URL reqwest puts in its outer message.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}
