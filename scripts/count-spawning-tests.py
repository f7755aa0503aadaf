#!/usr/bin/env python3
"""Counts the tests that spawn the `arbor` binary (or any process), for
docs/performance.md's suite figures (issue 25, item 5).

Reads every `*.rs` under each crate's `tests/` directory; a test is a
function after `#[test]`; it spawns when its body calls, directly or
through a function of the same test directory, `Command::new`, the
`CARGO_BIN_EXE_arbor` path, or `cli/tests/it/util.rs`'s spawners.
Prints `spawning total` per crate and overall.

Usage: scripts/count-spawning-tests.py [REPO]
"""
import os
import re
import sys

SPAWN = re.compile(r"Command::new|CARGO_BIN_EXE|\.spawn\(\)")
FN = re.compile(r"\bfn\s+([a-z_][a-z0-9_]*)\s*[<(]")


def bodies(text):
    """(name, is_test, body) of every fn in `text`, bodies by brace matching."""
    out = []
    for m in FN.finditer(text):
        start = text.find("{", m.end())
        semi = text.find(";", m.end())
        if start < 0 or (0 <= semi < start):
            continue
        depth, i = 0, start
        while i < len(text):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        head = text[max(0, m.start() - 200):m.start()]
        is_test = re.search(r"#\[test\][^\n]*\n(\s*#\[[^\n]*\n)*\s*(pub\s+)?(async\s+)?$", head) is not None
        out.append((m.group(1), is_test, text[start:i + 1]))
    return out


def count(tests_dir):
    fns = []
    for root, _, files in os.walk(tests_dir):
        for f in sorted(files):
            if f.endswith(".rs"):
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    fns.extend(bodies(fh.read()))
    spawning = {name for name, _, body in fns if SPAWN.search(body)}
    changed = True
    while changed:
        changed = False
        for name, _, body in fns:
            if name in spawning:
                continue
            if any(re.search(r"\b" + re.escape(s) + r"\s*[(:<]", body) for s in spawning):
                spawning.add(name)
                changed = True
    tests = [(n, b) for n, t, b in fns if t]
    return sum(1 for n, _ in tests if n in spawning), len(tests)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else "."
    total_s = total_t = 0
    for crate in sorted(os.listdir(repo)):
        tests = os.path.join(repo, crate, "tests")
        if not os.path.isdir(tests) or not os.path.isfile(os.path.join(repo, crate, "Cargo.toml")):
            continue
        s, t = count(tests)
        total_s += s
        total_t += t
        print(f"{crate:<12} {s:>4} spawning of {t:>4} integration tests")
    print(f"{'all':<12} {total_s:>4} spawning of {total_t:>4} integration tests")


if __name__ == "__main__":
    main()
