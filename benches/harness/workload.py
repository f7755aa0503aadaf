#!/usr/bin/env python3
"""Writes an exact synthetic workload in arbor's native JSONL form.

Part of arbor's measurement harness (benches/harness/run.sh).

    workload.py OUT.jsonl --trees M --turns K --isl I --osl O

M trees, each one root agent with K turns in a chain; every edge is stated
explicitly (`anchor: end`, `gap_ns: 0`), so a turn is eligible the instant
its predecessor's last byte arrived. Every tree arrives at 0. With
`arbor run --sessions N` the trees are dealt to N lanes that each run one
tree at a time, which holds exactly N requests in flight, back to back.
Prompts are synthesized by arbor from `isl` (no hash ids, no text).
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--trees", type=int, required=True)
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--isl", type=int, default=32)
    ap.add_argument("--osl", type=int, required=True)
    a = ap.parse_args()
    # Recorded times are only a description here (edges are stated); make
    # them consistent anyway: each turn lasts 1 ms and the next starts then.
    dur = 1_000_000
    with open(a.out, "w") as f:
        for t in range(a.trees):
            turns = [
                {"start_ns": k * dur, "duration_ns": dur, "isl": a.isl,
                 "osl": a.osl, "model": 0, "input": "tool_result"}
                for k in range(a.turns)
            ]
            edges = [
                {"from": [0, k - 1], "to": [0, k], "anchor": "end",
                 "gap_ns": 0, "kind": "sequence"}
                for k in range(1, a.turns)
            ]
            tree = {"arbor": 1, "id": f"h{t:05d}", "arrival_ns": 0,
                    "block_size": 64, "models": ["m"],
                    "agents": [{"id": "root", "parent": None, "kind": "root",
                                "turns": turns}],
                    "edges": edges}
            f.write(json.dumps(tree, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
