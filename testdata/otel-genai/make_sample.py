#!/usr/bin/env python3
"""Writes sample.json and sample.jsonl: OpenTelemetry GenAI spans, built by
hand to the OTLP/JSON encoding and the GenAI semantic conventions.

Not real data: no instrumentation produced these spans. They follow
- the OTLP/JSON encoding (open-telemetry/opentelemetry-proto
  docs/specification.md, "JSON Protobuf Encoding", and examples/trace.json):
  lowerCamelCase keys, hex `traceId`/`spanId`, 64-bit integers
  (`startTimeUnixNano`, `endTimeUnixNano`, `intValue`) as decimal strings,
  `kind` as an integer (1 INTERNAL, 3 CLIENT), attributes as
  `{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "arrayValue"}}`;
- the GenAI semantic conventions as of open-telemetry/semantic-conventions
  v1.41.0 (docs/gen-ai/gen-ai-spans.md, gen-ai-agent-spans.md): span names
  `invoke_agent {gen_ai.agent.name}`, `{gen_ai.operation.name}
  {gen_ai.request.model}`, `execute_tool {gen_ai.tool.name}`; the
  attributes those pages list for each span (operation name, provider,
  agent name and id, conversation id, request and response model, usage
  tokens, cache read tokens, time to first chunk, finish reasons, tool name,
  call id and type, server address and port).

sample.json is one ExportTraceServiceRequest (as an OTLP/HTTP JSON body);
sample.jsonl holds the same spans as the collector's file exporter writes
them: one request per line, spans batched in the order they ended.

Two traces:
1. 4bf92f3577b34da6a3ce929d0e0e4736: agent `coder` (4 chat calls, tools
   read_file, delegate_research, run_tests between them); its
   delegate_research tool runs agent `researcher` (3 chat calls, tools
   web_search and fetch_url between them); an HTTP client span under the
   first chat call (not a GenAI span).
2. 5b8efff798038103d269b633813fc60c: two chat calls of an app with no
   agent spans (conversation conv_02).

Run it here to write both files again: python3 make_sample.py
"""

import json

BASE = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z in ns
T1 = "4bf92f3577b34da6a3ce929d0e0e4736"
T2 = "5b8efff798038103d269b633813fc60c"
INTERNAL, CLIENT = 1, 3


def ns(seconds):
    return str(BASE + round(seconds * 10**9))


def s(value):
    return {"stringValue": value}


def i(value):
    return {"intValue": str(value)}


def d(value):
    return {"doubleValue": value}


def strings(*values):
    return {"arrayValue": {"values": [s(v) for v in values]}}


def attrs(**pairs):
    return [{"key": k.replace("__", "."), "value": v} for k, v in pairs.items()]


def span(trace, span_id, parent, name, kind, start, end, attributes):
    return {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": ns(start),
        "endTimeUnixNano": ns(end),
        "attributes": attributes,
        "status": {},
    }


def agent(trace, span_id, parent, name, agent_id, start, end):
    return span(trace, span_id, parent, f"invoke_agent {name}", INTERNAL, start, end, attrs(
        gen_ai__operation__name=s("invoke_agent"),
        gen_ai__provider__name=s("openai"),
        gen_ai__agent__name=s(name),
        gen_ai__agent__id=s(agent_id),
        gen_ai__conversation__id=s("conv_01"),
        gen_ai__request__model=s("gpt-4.1"),
    ))


def chat(trace, span_id, parent, start, end, tokens_in, tokens_out, first_chunk, finish,
         conversation="conv_01", provider="openai", model="gpt-4.1",
         response_model="gpt-4.1-2025-04-14", server="api.openai.com", cached=0):
    return span(trace, span_id, parent, f"chat {model}", CLIENT, start, end, attrs(
        gen_ai__operation__name=s("chat"),
        gen_ai__provider__name=s(provider),
        gen_ai__conversation__id=s(conversation),
        gen_ai__request__model=s(model),
        gen_ai__request__stream={"boolValue": True},
        gen_ai__response__model=s(response_model),
        gen_ai__response__id=s(f"resp_{span_id}"),
        gen_ai__response__finish_reasons=strings(finish),
        gen_ai__response__time_to_first_chunk=d(first_chunk),
        gen_ai__usage__input_tokens=i(tokens_in),
        gen_ai__usage__output_tokens=i(tokens_out),
        gen_ai__usage__cache_read__input_tokens=i(cached),
        server__address=s(server),
        server__port=i(443),
    ))


def tool(trace, span_id, parent, name, start, end):
    return span(trace, span_id, parent, f"execute_tool {name}", INTERNAL, start, end, attrs(
        gen_ai__operation__name=s("execute_tool"),
        gen_ai__tool__name=s(name),
        gen_ai__tool__call__id=s(f"call_{span_id}"),
        gen_ai__tool__type=s("function"),
    ))


coder = agent(T1, "a000000000000001", "", "coder", "asst_coder01", 0.0, 29.6)
research_call = tool(T1, "b000000000000002", coder["spanId"], "delegate_research", 4.7, 16.0)
researcher = agent(T1, "a000000000000002", research_call["spanId"], "researcher",
                   "asst_research01", 4.8, 15.9)
first_chat = chat(T1, "c000000000000001", coder["spanId"], 0.1, 2.1, 1200, 80, 0.35, "tool_calls")
spans_1 = [
    first_chat,
    span(T1, "d000000000000001", first_chat["spanId"], "POST", CLIENT, 0.12, 2.08, attrs(
        http__request__method=s("POST"),
        server__address=s("api.openai.com"),
        http__response__status_code=i(200),
    )),
    tool(T1, "b000000000000001", coder["spanId"], "read_file", 2.2, 2.5),
    chat(T1, "c000000000000002", coder["spanId"], 2.6, 4.6, 2100, 60, 0.41, "tool_calls", cached=1024),
    research_call,
    researcher,
    chat(T1, "c000000000000011", researcher["spanId"], 5.0, 6.5, 900, 40, 0.30, "tool_calls"),
    tool(T1, "b000000000000011", researcher["spanId"], "web_search", 6.6, 9.6),
    chat(T1, "c000000000000012", researcher["spanId"], 9.7, 12.0, 2600, 120, 0.52, "tool_calls", cached=768),
    tool(T1, "b000000000000012", researcher["spanId"], "fetch_url", 12.1, 13.0),
    chat(T1, "c000000000000013", researcher["spanId"], 13.1, 15.8, 4100, 300, 0.61, "stop", cached=2560),
    chat(T1, "c000000000000003", coder["spanId"], 16.1, 19.0, 2600, 200, 0.44, "tool_calls", cached=2048),
    tool(T1, "b000000000000003", coder["spanId"], "run_tests", 19.1, 25.0),
    chat(T1, "c000000000000004", coder["spanId"], 25.1, 29.5, 3300, 150, 0.48, "stop", cached=2560),
    coder,
]
spans_2 = [
    chat(T2, "e000000000000001", "", 40.0, 41.2, 500, 40, 0.62, "end_turn", conversation="conv_02",
         provider="anthropic", model="claude-sonnet-4-5", response_model="claude-sonnet-4-5-20250929",
         server="api.anthropic.com"),
    chat(T2, "e000000000000002", "", 41.5, 43.0, 800, 90, 0.58, "end_turn", conversation="conv_02",
         provider="anthropic", model="claude-sonnet-4-5", response_model="claude-sonnet-4-5-20250929",
         server="api.anthropic.com", cached=512),
]


def resource(service, spans):
    return {
        "resource": {"attributes": attrs(service__name=s(service), telemetry__sdk__language=s("python"))},
        "scopeSpans": [{"scope": {"name": "example.genai.instrumentation", "version": "0.1.0"},
                        "spans": spans}],
    }


def request(*resources):
    return {"resourceSpans": list(resources)}


with open("sample.json", "w") as out:
    json.dump(request(resource("coder-agent", spans_1), resource("chat-app", spans_2)), out, indent=2)
    out.write("\n")

# The file exporter's lines: spans in the order they ended, a few a batch.
ended = sorted([("coder-agent", x) for x in spans_1] + [("chat-app", x) for x in spans_2],
               key=lambda p: int(p[1]["endTimeUnixNano"]))
batches = [ended[0:6], ended[6:12], ended[12:]]
with open("sample.jsonl", "w") as out:
    for batch in batches:
        by_service = {}
        for service, x in batch:
            by_service.setdefault(service, []).append(x)
        line = request(*(resource(svc, xs) for svc, xs in by_service.items()))
        out.write(json.dumps(line, separators=(",", ":")) + "\n")
