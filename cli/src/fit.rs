//! Text made to fit a width on the console: the first of a line's forms
//! that fits, parts dropped whole, a text cut at a character with an
//! ellipsis, prose wrapped at spaces under a hanging indent.
//!
//! Owns the rule that a number is never cut: only whole parts are left
//! out, and only words or names (an error's message, a tree's id) are cut.
//! Widths are counted in characters (arbor's console text is ASCII but
//! for a server's message or a tree's id).

/// How many columns `text` takes.
pub fn width(text: &str) -> usize {
    text.chars().count()
}

/// The first of `forms` (longest first) that fits `width`, else the last.
pub fn first_fitting(forms: &[String], max: usize) -> String {
    forms
        .iter()
        .find(|f| width(f) <= max)
        .or(forms.last())
        .cloned()
        .unwrap_or_default()
}

/// `parts` (most wanted first) joined by `separator` within `max`: each
/// part that still fits, in order; one that would overflow is left out
/// whole.
pub fn parts(parts: &[String], separator: &str, max: usize) -> String {
    let mut line = String::new();
    for part in parts {
        let extra = if line.is_empty() {
            width(part)
        } else {
            width(separator) + width(part)
        };
        if width(&line) + extra > max {
            continue;
        }
        if !line.is_empty() {
            line.push_str(separator);
        }
        line.push_str(part);
    }
    line
}

/// `text` cut to `max` columns, ending in `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut kept: String = text.chars().take(max - 1).collect();
    kept.push('…');
    kept
}

/// `text` with control characters (an escape sequence in a server's
/// message or a tree's id) shown as `?`, so it cannot move the cursor.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// `text` wrapped at spaces into lines of at most `max` columns, the first
/// starting with `first` and the others with `indent` (a word longer than
/// a line stays whole on a line of its own).
pub fn wrap(first: &str, indent: &str, text: &str, max: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && width(&line) + 1 + width(word) > max {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_first_form_that_fits_is_taken() {
        let forms = strings(&["12.0 s elapsed of 1:00 planned", "12.0 s of 1:00", "12.0 s"]);
        assert_eq!(first_fitting(&forms, 40), "12.0 s elapsed of 1:00 planned");
        assert_eq!(first_fitting(&forms, 20), "12.0 s of 1:00");
        assert_eq!(first_fitting(&forms, 3), "12.0 s");
    }

    #[test]
    fn parts_are_left_out_whole() {
        let p = strings(&["45 sent", "40 done", "5 in flight", "12345 errors"]);
        assert_eq!(
            parts(&p, " · ", 100),
            "45 sent · 40 done · 5 in flight · 12345 errors"
        );
        assert_eq!(parts(&p, " · ", 31), "45 sent · 40 done · 5 in flight");
        assert_eq!(parts(&p, " · ", 30), "45 sent · 40 done");
        assert_eq!(parts(&p, ", ", 20), "45 sent, 40 done");
    }

    #[test]
    fn text_is_cut_with_an_ellipsis_at_a_character() {
        assert_eq!(cut("HTTP 503: busy", 20), "HTTP 503: busy");
        assert_eq!(cut("HTTP 503: busy", 8), "HTTP 50…");
        assert_eq!(width(&cut("élan ünïcode ñ", 5)), 5);
        assert_eq!(cut("abc", 0), "");
    }

    #[test]
    fn prose_wraps_at_spaces_under_an_indent() {
        let lines = wrap(
            "  throughput      ",
            "                  ",
            "8.134 ok requests/s, 438003 input tokens/s, 4692 output tokens/s",
            50,
        );
        assert_eq!(
            lines,
            [
                "  throughput      8.134 ok requests/s, 438003",
                "                  input tokens/s, 4692 output",
                "                  tokens/s",
            ]
        );
        assert!(lines.iter().all(|l| width(l) <= 50));
    }
}
