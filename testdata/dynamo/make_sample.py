"""Writes sample.jsonl: a hand-built Dynamo request trace (dynamo.request.trace.v1)
laid out as ai-dynamo/dynamo's lib/llm/src/agents/trace/types.rs records it.
Run: python3 make_sample.py"""
import json

T0 = 1760000000000  # unix ms


def H(tag, i):
    """A u64 sequence hash: equal (tag, i) give equal hashes."""
    return (0x9E3779B97F4A7C15 * (ord(tag) * 131 + i + 1)) % (1 << 64)


def A(n):
    return [H("A", i) for i in range(n)]


def req(session, parent, rid, recv, total, isl, osl, hashes, total_present=True):
    ctx = {"session_id": session}
    if parent:
        ctx["parent_session_id"] = parent
    r = {"request_id": rid, "x_request_id": "x-" + rid, "model": "zai-org/GLM-4.7-Flash",
         "input_tokens": isl, "output_tokens": osl, "cached_tokens": 0,
         "request_received_ms": recv, "prefill_wait_time_ms": 2.5, "prefill_time_ms": 40.0,
         "ttft_ms": 85.0}
    if total_present:
        r["total_time_ms"] = float(total)
    r.update({"avg_itl_ms": 12.0, "kv_hit_rate": 0.5, "queue_depth": 0,
              "worker": {"prefill_worker_id": 1, "decode_worker_id": 1},
              "replay": {"trace_block_size": 16, "input_length": isl, "input_sequence_hashes": hashes}})
    assert len(hashes) == -(-isl // 16), rid
    return {"schema": "dynamo.request.trace.v1", "event_type": "request_end",
            "event_time_unix_ms": recv + total, "event_source": "dynamo",
            "agent_context": ctx, "request": r}


def tool(session, start, dur, cid):
    return {"schema": "dynamo.request.trace.v1", "event_type": "tool_end",
            "event_time_unix_ms": start + dur, "event_source": "harness",
            "agent_context": {"session_id": session},
            "tool": {"tool_call_id": cid, "tool_class": "bash", "status": "succeeded",
                     "duration_ms": float(dur), "output_tokens": 9, "output_bytes": 64}}


B = [H("A", 0)] + [H("B", i) for i in range(1, 4)]
C = [H("A", 0), H("C", 1)]
D = [H("A", 0)] + [H("D", i) for i in range(1, 3)]
rows = [
    req("thread-1", None, "req-1", T0, 1500, 40, 30, A(3)),
    tool("thread-1", T0 + 1500, 400, "call-1"),
    req("thread-1", None, "req-2", T0 + 2000, 1200, 70, 20, A(5)),
    req("thread-1-explore", "thread-1", "req-3", T0 + 3500, 800, 36, 12, B[:3]),
    req("thread-1-test", "thread-1", "req-4", T0 + 3600, 2500, 20, 50, C),
    req("thread-2", None, "req-5", T0 + 4000, 600, 33, 8, D),
    req("thread-1-explore", "thread-1", "req-6", T0 + 5000, 900, 52, 14, B),
    req("thread-1", None, "req-7", T0 + 7000, 1000, 100, 40, A(7)),
    req("thread-2", None, "req-8", T0 + 6000, 700, 60, 9, D + [H("D", 3)], total_present=False),
    req("thread-1", None, "req-9", T0 + 9000, 500, 120, 10, A(8)),
]
# The sink writes a record when its request ends.
rows.sort(key=lambda r: r["event_time_unix_ms"])
with open("sample.jsonl", "w") as f:
    f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
