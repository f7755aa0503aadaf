//! Which model a run asks for, from what the server lists at
//! `/v1/models` and what `--model` says. Pure: no I/O.
//!
//! `--model M` listed exactly is taken; otherwise the one listed id that
//! contains `M` is (a short name for a long id, as swo-bench allows);
//! otherwise the run is refused, listing the ids, unless
//! `--allow-unlisted-model`. Without `--model` the one listed id is taken;
//! several are refused, listed, since taking the first would benchmark a
//! model nobody chose.

use crate::endpoint::MODEL_ID_CAP;

/// The model chosen and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub model: String,
    /// `flag` (`--model`, listed), `flag-unlisted` (`--model`, not listed,
    /// allowed), `flag-substring` (the listed id containing `--model`),
    /// `server` (the only id listed), `flag-unchecked` (the server lists
    /// none).
    pub from: &'static str,
    /// Said on stderr before the run, when the choice needs saying.
    pub notice: Option<String>,
}

/// The most ids a refusal lists.
const LISTED: usize = 20;

/// `ids`, for a message: at most [`LISTED`] of them, the rest counted.
pub fn listing(ids: &[String]) -> String {
    let mut shown: Vec<&str> = ids.iter().take(LISTED).map(String::as_str).collect();
    let more = ids.len().saturating_sub(LISTED);
    let more = (more > 0).then(|| format!("and {more} more"));
    shown.extend(more.as_deref());
    shown.join(", ")
}

/// The model to ask for among `ids` (the server's list, in its order):
/// `Err` with the refusal's words.
pub fn choose(
    ids: &[String],
    wanted: Option<&str>,
    allow_unlisted: bool,
) -> Result<Chosen, String> {
    let chosen = match wanted {
        Some(m) if ids.iter().any(|id| id == m) => Chosen {
            model: m.to_string(),
            from: "flag",
            notice: None,
        },
        Some(m) => {
            let containing: Vec<&String> = ids.iter().filter(|id| id.contains(m)).collect();
            match (containing.as_slice(), allow_unlisted) {
                (_, true) => Chosen {
                    model: m.to_string(),
                    from: "flag-unlisted",
                    notice: Some(format!(
                        "arbor run: --model {m} is not among the models the server lists ({}); \
                         sent as given (--allow-unlisted-model)",
                        listing(ids)
                    )),
                },
                ([one], false) => Chosen {
                    model: (*one).clone(),
                    from: "flag-substring",
                    notice: Some(format!(
                        "arbor run: --model {m} is not listed exactly; asking for {one}, the one \
                         listed model whose id contains it"
                    )),
                },
                ([], false) => {
                    return Err(format!(
                        "the server does not serve --model {m}: it lists {}. Give one of them to \
                         --model, or --allow-unlisted-model to send {m} anyway",
                        listing(ids)
                    ))
                }
                (several, false) => {
                    let ids: Vec<String> = several.iter().map(|s| (*s).clone()).collect();
                    return Err(format!(
                        "--model {m} is not listed exactly and {} listed models contain it ({}): \
                         give the full id to --model",
                        ids.len(),
                        listing(&ids)
                    ));
                }
            }
        }
        None => match ids {
            [] => {
                return Err(
                    "the server lists no models at /v1/models: pass --model M (the model it \
                     serves)"
                        .to_string(),
                )
            }
            [one] => Chosen {
                model: one.clone(),
                from: "server",
                notice: None,
            },
            several => {
                return Err(format!(
                    "the server lists {} models ({}): choose one with --model",
                    several.len(),
                    listing(several)
                ))
            }
        },
    };
    if chosen.model.len() > MODEL_ID_CAP {
        return Err(format!(
            "the model id is {} bytes, over the {MODEL_ID_CAP}-byte cap on a model id",
            chosen.model.len()
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_exact_id_is_taken_and_a_unique_substring_is_completed() {
        let listed = ids(&["meta-llama/Llama-3.1-8B-Instruct", "qwen2.5-0.5b"]);
        let exact = choose(&listed, Some("qwen2.5-0.5b"), false).unwrap();
        assert_eq!((exact.model.as_str(), exact.from), ("qwen2.5-0.5b", "flag"));
        assert!(exact.notice.is_none());
        let part = choose(&listed, Some("Llama-3.1-8B"), false).unwrap();
        assert_eq!(part.model, "meta-llama/Llama-3.1-8B-Instruct");
        assert_eq!(part.from, "flag-substring");
        assert!(part.notice.unwrap().contains("contains it"));
    }

    #[test]
    fn an_unlisted_model_is_refused_listing_the_served_ones_unless_allowed() {
        let listed = ids(&["m1", "m2"]);
        let refused = choose(&listed, Some("llama-3-8b"), false).unwrap_err();
        for words in [
            "does not serve --model llama-3-8b",
            "m1, m2",
            "--allow-unlisted-model",
        ] {
            assert!(refused.contains(words), "{words}: {refused}");
        }
        let allowed = choose(&listed, Some("llama-3-8b"), true).unwrap();
        assert_eq!(
            (allowed.model.as_str(), allowed.from),
            ("llama-3-8b", "flag-unlisted")
        );
        assert!(allowed.notice.unwrap().contains("m1, m2"));
    }

    #[test]
    fn an_ambiguous_substring_is_refused_naming_the_candidates() {
        let listed = ids(&["org/a-7b", "org/a-70b", "other"]);
        let refused = choose(&listed, Some("org/a-7"), false).unwrap_err();
        assert!(refused.contains("2 listed models contain it"), "{refused}");
        assert!(refused.contains("org/a-7b, org/a-70b"), "{refused}");
    }

    #[test]
    fn without_model_one_listed_is_taken_and_several_are_refused() {
        let one = choose(&ids(&["only"]), None, false).unwrap();
        assert_eq!((one.model.as_str(), one.from), ("only", "server"));
        let several = choose(&ids(&["a", "b", "c"]), None, false).unwrap_err();
        assert!(
            several.contains("lists 3 models (a, b, c): choose one with --model"),
            "{several}"
        );
        let none = choose(&[], None, false).unwrap_err();
        assert!(none.contains("pass --model M"), "{none}");
    }

    #[test]
    fn a_long_listing_is_cut_and_counted_and_a_long_id_is_refused() {
        let many: Vec<String> = (0..25).map(|i| format!("m{i}")).collect();
        let text = listing(&many);
        assert!(text.ends_with("m19, and 5 more"), "{text}");
        let long = vec!["x".repeat(600)];
        let refused = choose(&long, None, false).unwrap_err();
        assert!(
            refused.contains("600 bytes, over the 512-byte cap"),
            "{refused}"
        );
    }
}
