#!/usr/bin/env python3
"""Writes subagents.jsonl: TraceLab rounds built by hand to exercise the
subagent attach rule (docs/formats/tracelab.md, "Inferred: subagents").

Not real data. The row shape is TraceLab's sanitized round trace (the
fields of round_trace.jsonl beside this script); the values are made up.
Claude Code writes a subagent's transcript to a file of its own, which
TraceLab's collector reads as a session of its own in the same project,
with no link to its parent: the reader attaches it to the session whose
Task/Agent tool call contains it in time.

Four sessions, 2026-06-01 from 10:00:00 UTC:
- parent: 4 rounds; its first round calls Task at +5 s, whose result comes
  back at +65 s.
- child: 3 rounds between +6 s and +59 s, same project: inside the Task
  call, so attached to parent (timing containment).
- early: same project, 2 rounds from +2 s to +40 s: overlaps the Task call
  but starts before it, so not attached (a tree of its own).
- other: another project, 1 round at +30 s to +50 s: inside the Task call
  in time, but not the same project, so not attached.

Run it here to write the file again: python3 make_subagents.py
"""

import hashlib
import json


def at(seconds):
    """RFC 3339 time `seconds` (< 60, may have a fraction) after T0; more
    than 59 s rolls over to the next minute."""
    minute, second = divmod(seconds, 60)
    return f"2026-06-01T10:{int(minute):02d}:{second:06.3f}Z"


def round_row(session, project, index, isl, prefix, osl, events, tools):
    """One round in TraceLab's sanitized shape."""
    inputs = [e for e in events if e["event_type"] in ("user_message", "tool_result")]
    users = [e for e in inputs if e["event_type"] == "user_message"]
    results = [e for e in inputs if e["event_type"] == "tool_result"]
    round_id = "msg_" + hashlib.sha256(f"{session}/{index}".encode()).hexdigest()[:24]
    return {
        "provider": "claude",
        "project": project,
        "session_id": session,
        "round_index": index,
        "round_id": round_id,
        "model": "claude-opus-4-8",
        "input_tokens_total": isl,
        "prefix_tokens": prefix,
        "newly_append_tokens": isl - prefix,
        "claude_uncached_input_tokens": 3,
        "claude_cache_creation_input_tokens": isl - prefix - 3,
        "claude_cache_read_input_tokens": prefix,
        "output_tokens": osl,
        "reasoning_output_tokens": None,
        "timing_events": events,
        "tools": tools,
        "current_input_event_count": len(inputs),
        "current_user_message_count": len(users),
        "current_tool_result_count": len(results),
        "current_user_message_chars": sum(e.get("content_chars", 0) for e in users),
        "current_tool_result_chars": sum(e.get("result_chars", 0) for e in results),
        "current_input_chars": sum(e.get("content_chars", e.get("result_chars", 0)) for e in inputs),
        "first_input_event_type": inputs[0]["event_type"] if inputs else None,
        "store": ".claude",
        "trace_key": f"claude:{session}:{round_id}",
    }


def user(t, chars=120):
    return {"event_type": "user_message", "timestamp": at(t), "source": "user.message", "content_chars": chars}


def result(t, call, chars=400):
    return {"event_type": "tool_result", "timestamp": at(t), "source": "user.content.tool_result",
            "tool_call_id": call, "result_chars": chars, "is_error": False}


def text(t, chars=200):
    return {"event_type": "text", "timestamp": at(t), "source": "assistant.content.text", "content_chars": chars}


def call(t, call_id, name, index=0):
    return {"event_type": "tool_call", "timestamp": at(t), "source": "assistant.content.tool_use",
            "tool_call_id": call_id, "tool_name": name, "tool_index": index}


def tool(call_id, name, emitted, returned, index=0):
    return {"tool_index": index, "tool_name": name, "tool_call_id": call_id,
            "emitted_at": at(emitted), "input_chars": 150, "result_chars": 400,
            "tool_wall_latency_ms": round((returned - emitted) * 1000),
            "tool_internal_latency_ms": None, "is_error": False, "result_at": at(returned)}


P = "claude:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
C = "claude:1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809"
E = "claude:2b3c4d5e-6f70-8192-a3b4-c5d6e7f8091a"
O = "claude:3c4d5e6f-7081-92a3-b4c5-d6e7f8091a2b"
HERE = "project_5ab1e2c3"
THERE = "project_9f8e7d6c"

rows = [
    # parent: round 0 calls Task (+5 s to +65 s)
    round_row(P, HERE, 0, 24000, 18000, 300,
              [user(0.0, 300), text(4.2), call(5.0, "toolu_01", "Task")],
              [tool("toolu_01", "Task", 5.0, 65.0)]),
    round_row(P, HERE, 1, 26500, 24000, 150,
              [result(65.0, "toolu_01", 2400), text(69.5), call(71.0, "toolu_02", "Bash")],
              [tool("toolu_02", "Bash", 71.0, 72.25)]),
    round_row(P, HERE, 2, 27000, 26496, 400,
              [result(72.25, "toolu_02"), text(80.0)], []),
    round_row(P, HERE, 3, 27800, 26990, 200,
              [user(120.0), text(125.5)], []),
    # child: its own transcript, wholly inside the Task call
    round_row(C, HERE, 0, 9000, 8192, 120,
              [user(6.0, 900), text(10.0), call(11.0, "toolu_11", "Read")],
              [tool("toolu_11", "Read", 11.0, 12.0)]),
    round_row(C, HERE, 1, 11000, 9000, 90,
              [result(12.0, "toolu_11", 6000), text(20.0), call(21.0, "toolu_12", "Grep")],
              [tool("toolu_12", "Grep", 21.0, 22.5)]),
    round_row(C, HERE, 2, 12500, 11000, 600,
              [result(22.5, "toolu_12"), text(59.0)], []),
    # early: same project, starts before the Task call
    round_row(E, HERE, 0, 15000, 0, 50,
              [user(2.0), text(6.5), call(7.0, "toolu_21", "Bash")],
              [tool("toolu_21", "Bash", 7.0, 30.0)]),
    round_row(E, HERE, 1, 15600, 15000, 500,
              [result(30.0, "toolu_21"), text(40.0)], []),
    # other: another project, inside the Task call in time
    round_row(O, THERE, 0, 5000, 0, 80,
              [user(30.0), text(50.0)], []),
]

# File order as TraceLab's collector writes it: session by session.
with open("subagents.jsonl", "w") as out:
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
