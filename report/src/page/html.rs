//! The page itself: one HTML file with everything inlined (styles, the
//! vendored uPlot, arbor's own script, and the data as one JSON blob in a
//! `<script type="application/json">`), so it opens from disk with no
//! network. The assets live in `report/assets/` and are compiled in.

const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const COMMON_JS: &str = include_str!("../../assets/common.js");
const PAGE_JS: &str = include_str!("../../assets/report.js");
const PAGE_CSS: &str = include_str!("../../assets/report.css");

/// The page for `data` (the JSON the script reads), titled `title`.
pub fn page(title: &str, data: &str) -> String {
    page_drawn_by(title, data, PAGE_JS, "")
}

/// The page for `data`, drawn by `script` (another page's own, e.g. the
/// capacity page's) with uPlot, the pages' shared helpers
/// (`assets/common.js`) and the report's styles, then `styles`.
pub fn page_drawn_by(title: &str, data: &str, script: &str, styles: &str) -> String {
    let mut html = String::with_capacity(data.len() + UPLOT_JS.len() + script.len() + 8_192);
    html.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<title>");
    html.push_str(&escape_text(title));
    html.push_str("</title>\n<style>\n");
    html.push_str(UPLOT_CSS);
    html.push('\n');
    html.push_str(PAGE_CSS);
    if !styles.is_empty() {
        html.push('\n');
        html.push_str(styles);
    }
    html.push_str("\n</style>\n</head>\n<body>\n<div id=\"app\"></div>\n");
    html.push_str("<script id=\"arbor-data\" type=\"application/json\">");
    html.push_str(&in_script(data));
    html.push_str("</script>\n<script>\n");
    html.push_str(UPLOT_JS);
    html.push_str("\n</script>\n<script>\n");
    html.push_str(COMMON_JS);
    html.push_str("\n</script>\n<script>\n");
    html.push_str(script);
    html.push_str("\n</script>\n</body>\n</html>\n");
    html
}

/// JSON made safe inside a script element: `<` only occurs in JSON
/// strings, where `\u003c` means the same, so no `</script>` can end the
/// element early.
fn in_script(json: &str) -> String {
    json.replace('<', "\\u003c")
}

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_its_script_element() {
        let html = page("a <b>", r#"{"name":"</script><script>alert(1)"}"#);
        assert_eq!(html.matches("</script>").count(), 4);
        assert!(html.contains("<title>a &lt;b&gt;</title>"));
    }

    #[test]
    fn assets_hold_no_closing_script_tag() {
        for asset in [UPLOT_JS, COMMON_JS, PAGE_JS] {
            assert!(!asset.to_ascii_lowercase().contains("</script"));
        }
    }
}
