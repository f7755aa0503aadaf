//! Turns the input and policy flags into a workload and a policy.
//! Every parse failure becomes an exit-code-2 [`Failure`].

use std::path::Path;

use arbor_engine::derive::DeriveOptions;
use arbor_engine::load::{self, synthetic::SyntheticSpec};
use arbor_engine::policy::{parse_seconds, GapTransform, Policy};
use arbor_engine::Workload;

use crate::args::{InputArgs, PolicyArgs};
use crate::{sample, Failure};

/// What the inputs were, for reports.
pub struct LoadedInput {
    pub workload: Workload,
    pub description: String,
}

pub fn load(args: &InputArgs) -> Result<LoadedInput, Failure> {
    let mut parts = Vec::new();
    let mut workload = if args.inputs.is_empty() && args.synthetic.is_none() {
        parts.push("bundled sample (4 Weka traces)".to_string());
        sample::workload().map_err(Failure::input)?
    } else {
        let format = args
            .format
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(Failure::input)?;
        let mut w = Workload::default();
        for loaded in load::load_all(&args.inputs, format).map_err(Failure::input)? {
            let name = loaded.format.map_or("?", |f| f.name());
            parts.push(format!("{} ({name})", loaded.path));
            w.trees.extend(loaded.trees);
        }
        w
    };
    if let Some(text) = &args.synthetic {
        let spec = synthetic_spec(text)?;
        parts.push(format!("synthetic {}", spec.to_spec_string()));
        workload.trees.extend(spec.generate().trees);
    }
    if let Some(path) = &args.tokenizer {
        let tokenizer = crate::tokenizer::load(path)?;
        let recount = crate::tokenizer::apply(&tokenizer, &mut workload);
        if !recount.multi_token_words.is_empty() {
            eprintln!(
                "warning: {}: {} words of arbor's synthesis vocabulary are not single tokens ({}): \
                 synthesized prompts will be a little longer than recorded",
                path.display(),
                recount.multi_token_words.len(),
                recount.multi_token_words.join(",")
            );
        }
        parts.push(format!(
            "{} text turns counted with {}",
            recount.text_turns,
            path.display()
        ));
    }
    Ok(LoadedInput {
        workload,
        description: parts.join(", "),
    })
}

/// A spec string, or a path to a .toml/.json spec file.
fn synthetic_spec(text: &str) -> Result<SyntheticSpec, Failure> {
    let looks_like_file =
        text.ends_with(".toml") || text.ends_with(".json") || Path::new(text).is_file();
    if looks_like_file && !text.contains('=') {
        SyntheticSpec::from_file(Path::new(text)).map_err(Failure::input)
    } else {
        text.parse().map_err(Failure::input)
    }
}

pub fn derive_options(args: &InputArgs) -> Result<DeriveOptions, Failure> {
    Ok(DeriveOptions {
        overlap_tolerance: parse_seconds("--overlap-tolerance", &args.overlap_tolerance)
            .map_err(Failure::input)?,
    })
}

pub fn policy(args: &PolicyArgs) -> Result<Policy, Failure> {
    let seconds = |flag, text: &Option<String>| -> Result<_, Failure> {
        text.as_deref()
            .map(|t| parse_seconds(flag, t))
            .transpose()
            .map_err(Failure::input)
    };
    let policy = Policy {
        tool_time: GapTransform::parse("--tool-time", &args.tool_time).map_err(Failure::input)?,
        think_time: match &args.think_time_pct {
            Some(p) => Policy::think_pct(p).map_err(Failure::input)?,
            None => GapTransform::Recorded,
        },
        arrival: args.arrival.parse().map_err(Failure::input)?,
        copies: args.copies,
        stagger: args.stagger.parse().map_err(Failure::input)?,
        max_inflight: args.max_inflight,
        sessions: args.sessions,
        loop_lanes: args.loop_lanes,
        idle_gap_cap: seconds("--idle-gap-cap", &args.idle_gap_cap)?,
        duration: seconds("--duration", &args.duration)?,
        grace: parse_seconds("--grace", &args.grace).map_err(Failure::input)?,
        seed: args.seed,
        start_window: args
            .start_window
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(Failure::input)?,
        tree_idle_cap: seconds("--tree-idle-cap", &args.tree_idle_cap)?,
        warmup_spread: parse_seconds("--warmup-spread", &args.warmup_spread)
            .map_err(Failure::input)?,
    };
    policy.validate().map_err(Failure::input)?;
    Ok(policy)
}
