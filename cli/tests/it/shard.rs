//! `arbor plan --shard I/N` and `arbor merge`: the shards' timelines
//! merge into the unsharded timeline, byte for byte; shards that do not
//! belong together and policies that cannot be split are refused. (The
//! live merge of run directories is not built yet.)

use std::path::Path;

use crate::util::*;

fn plan(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut all: Vec<&str> = vec!["plan"];
    all.extend_from_slice(args);
    let p = path.to_str().unwrap().to_string();
    all.extend_from_slice(&["--timeline", &p]);
    let out = arbor(&all);
    assert!(out.status.success(), "{all:?}: {}", stderr(&out));
    path
}

#[test]
fn merged_shard_timelines_are_the_unsharded_timeline() {
    let dir = scratch("shard-merge");
    let cases: [&[&str]; 3] = [
        &["--sessions", "3", "--copies", "4"],
        &[
            "--arrival",
            "poisson:5",
            "--copies",
            "3",
            "--stagger",
            "random:2s",
        ],
        &[
            "--arrival",
            "rate:2",
            "--copies",
            "2",
            "--stagger",
            "even:3s",
        ],
    ];
    for (c, args) in cases.iter().enumerate() {
        let whole = plan(&dir, &format!("whole-{c}.jsonl"), args);
        for n in [2u32, 3, 7] {
            let mut files = Vec::new();
            for i in (0..n).rev() {
                let shard = format!("{i}/{n}");
                let mut a = args.to_vec();
                a.extend_from_slice(&["--shard", &shard]);
                let f = plan(&dir, &format!("s{c}-{i}-of-{n}.jsonl"), &a);
                files.push(f.to_str().unwrap().to_string());
            }
            let merged = dir.join(format!("merged-{c}-{n}.jsonl"));
            let mut m: Vec<&str> = vec!["merge"];
            m.extend(files.iter().map(String::as_str));
            m.extend_from_slice(&["-o", merged.to_str().unwrap()]);
            let out = arbor(&m);
            assert!(out.status.success(), "{}", stderr(&out));
            assert_eq!(
                std::fs::read(&merged).unwrap(),
                std::fs::read(&whole).unwrap(),
                "case {c} N = {n}"
            );
        }
    }
}

#[test]
fn shards_that_do_not_belong_together_are_refused() {
    let dir = scratch("shard-refuse");
    let a = plan(&dir, "a.jsonl", &["--copies", "2", "--shard", "0/2"]);
    let b = plan(
        &dir,
        "b.jsonl",
        &["--copies", "2", "--shard", "1/2", "--seed", "9"],
    );
    let c = plan(&dir, "c.jsonl", &["--copies", "2", "--shard", "0/2"]);
    let out = dir.join("m.jsonl");
    let o = out.to_str().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    expect_exit_2(&["merge", &s(&a), &s(&b), "-o", o], &["seed 9"]);
    expect_exit_2(&["merge", &s(&a), &s(&c), "-o", o], &["both are shard 0/2"]);
    expect_exit_2(&["merge", &s(&a), "-o", o], &["missing shard 1/2"]);
}

#[test]
fn policies_that_cannot_be_split_are_refused() {
    expect_exit_2(
        &["plan", "--idle-gap-cap", "1s", "--shard", "0/2"],
        &["--idle-gap-cap with --shard"],
    );
    expect_exit_2(
        &[
            "plan",
            "--sessions",
            "2",
            "--start-window",
            "0.2:0.8",
            "--shard",
            "1/2",
        ],
        &["--start-window with --shard"],
    );
    expect_exit_2(&["plan", "--shard", "2/2"], &["expected I/N"]);
}
