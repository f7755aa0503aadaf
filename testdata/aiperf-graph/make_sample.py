"""Writes sample.dag.jsonl: a small AIPerf `dag_jsonl` graph (see README.md).

Run it here to write the sample again; with `--check` it also loads the
file with AIPerf's own loader (`pip install aiperf`, 0.13.0 or later) and
prints the conversations, roots and branches AIPerf makes of it.
"""

import json
import sys

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def user(text):
    return {"role": "user", "content": text}


def tool(text, call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


CONVERSATIONS = [
    {
        "session_id": "plan-1",
        "turns": [
            {
                "messages": [
                    {"role": "system", "content": "You are a coding agent. Use the tools."},
                    user("The test suite fails on parse_config; find out why and fix it."),
                ],
                "model": "qwen3-coder",
                "max_tokens": 120,
                "tools": TOOLS,
            },
            {
                "messages": [tool("def parse_config(path):\n    return toml.load(path)\n", "call_1")],
                "model": "qwen3-coder",
                "max_tokens": 80,
                "delay": 1200,
                "spawns": [
                    "plan-1-explore",
                    {"children": ["plan-1-test"], "join_at": 3},
                ],
            },
            {
                "messages": [tool("3 files import parse_config.", "call_2")],
                "model": "qwen3-coder",
                "max_tokens": 60,
                "delay": 500,
            },
            {
                "messages": [user("Both helpers are done. Write the fix.")],
                "model": "qwen3-coder",
                "max_tokens": 200,
                "delay": 2000,
                "forks": ["plan-1-wrap"],
            },
        ],
    },
    {
        "session_id": "plan-1-explore",
        "turns": [
            {
                "messages": [user("Find every caller of parse_config.")],
                "model": "qwen3-small",
                "max_tokens": 40,
                "delay": 100,
            },
            {
                "messages": [tool("src/cli.py:12\nsrc/app.py:40\n", "call_3")],
                "model": "qwen3-small",
                "max_tokens": 30,
                "delay": 300.5,
            },
        ],
    },
    {
        "session_id": "plan-1-test",
        "turns": [
            {
                "messages": [user("Run the tests of the config module.")],
                "model": "qwen3-small",
                "max_tokens": 50,
                "delay": 250,
            }
        ],
    },
    {
        "session_id": "plan-1-wrap",
        "turns": [
            {
                "messages": [user("Summarize the change for the commit message.")],
                "model": "qwen3-coder",
                "max_tokens": 64,
            }
        ],
    },
    {
        "session_id": "chat-2",
        "context_mode": "deltas_with_responses",
        "pre_session_spawns": ["chat-2-title"],
        "turns": [
            {
                "messages": [user("What does this repository do?")],
                "max_tokens": 90,
                "delay": 10,
            },
            {
                "messages": [
                    assistant("It parses configuration files and runs a CLI."),
                    user("Then run its tests."),
                ],
                "delay": 3000,
                "spawns": ["plan-1-test"],
                "extra": {"temperature": 0.0},
            },
        ],
    },
    {
        "session_id": "chat-2-title",
        "context_mode": "message_array_with_responses",
        "turns": [
            {
                "messages": [
                    {"role": "system", "content": "Write a five-word title."},
                    user("What does this repository do?"),
                ],
                "max_tokens": 12,
                "delay": 50,
            }
        ],
    },
]


def main():
    with open("sample.dag.jsonl", "w") as out:
        for conversation in CONVERSATIONS:
            out.write(json.dumps(conversation, separators=(",", ":")) + "\n")
    if "--check" in sys.argv:
        from aiperf.dataset.loader.dag_jsonl import DagJsonlLoader

        loader = DagJsonlLoader("sample.dag.jsonl")
        conversations = loader.load()
        print("roots:", sorted(loader.root_session_ids()))
        for c in conversations:
            branches = [
                (b.branch_id, b.mode.value, b.child_conversation_ids, b.is_background)
                for b in c.branches
            ]
            joins = [
                (i, [p.branch_id for p in t.prerequisites])
                for i, t in enumerate(c.turns)
                if t.prerequisites
            ]
            delays = [t.delay for t in c.turns]
            print(c.session_id, c.context_mode.value, "delays", delays, "branches", branches, "joins", joins)


if __name__ == "__main__":
    main()
