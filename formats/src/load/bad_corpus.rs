//! The bad-input corpus, `testdata/bad/<format>/`: one row per file,
//! with what its message must say besides naming the file. Every file in
//! the corpus has a row, so a new bad file comes with its expected message.
//! Also: every reader and detector survives every cut of every fixture.

use std::path::Path;

use super::test_support::{assert_contains, scratch_file, testdata};
use super::{load_path, Format, Prefix, FORMATS};

/// (format, file, parts of its message)
const CORPUS: &[(&str, &str, &[&str])] = &[
    ("abench", "empty.jsonl", &["empty.jsonl", "empty file", "expected one abench session"]),
    ("abench", "invalid_json.jsonl", &["invalid_json.jsonl", "line 2, column 58, $.turns[0]: invalid JSON: trailing comma"]),
    ("abench", "string_tokens.jsonl", &["string_tokens.jsonl", "line 1, $.turns[2].input_tokens", "invalid type: string \"1,204\": expected a non-negative integer"]),
    ("abench", "missing_turns.jsonl", &["missing_turns.jsonl", "line 1", "missing field `turns`"]),
    ("abench", "negative_gap.jsonl", &["negative_gap.jsonl", "line 1, $.turns[1].pre_gap_ms", "expected a non-negative finite number of milliseconds (at most 1000000000000), got -250"]),
    ("abench", "huge_gap.jsonl", &["huge_gap.jsonl", "line 1, $.turns[1].pre_gap_ms", "expected a non-negative finite number of milliseconds (at most 1000000000000), got 1e300"]),
    ("abench", "unknown_role.jsonl", &["unknown_role.jsonl", "line 2, $.turns[1].input_delta[0].role", "expected a role name (system, developer, user, assistant, tool or function), got `observation`"]),
    ("abench", "index_order.jsonl", &["index_order.jsonl", "line 1, $.turns[1].index", "expected turns in order, turn 1 to have index 1, got 2"]),
    ("abench", "binary.jsonl", &["binary.jsonl", "line 1", "not UTF-8 text"]),
    ("abench", "corrupt.jsonl.zst", &["corrupt.jsonl.zst", "corrupt zstd stream"]),
    ("abench", "truncated.jsonl.zst", &["truncated.jsonl.zst", "corrupt zstd stream"]),
    ("lmcache", "empty.jsonl", &["empty.jsonl", "empty file", "expected LMCache trace rows"]),
    ("lmcache", "blank_lines.jsonl", &["blank_lines.jsonl", "empty file"]),
    ("lmcache", "invalid_json.jsonl", &["invalid_json.jsonl", "line 2, column", "invalid JSON", "truncated"]),
    ("lmcache", "string_timestamp.jsonl", &["string_timestamp.jsonl", "line 1, $.timestamp", "invalid type: string \"2025-10-16T04:10:01Z\": expected a unix time in whole microseconds"]),
    ("lmcache", "missing_session_id.jsonl", &["missing_session_id.jsonl", "line 2", "missing field `session_id`"]),
    ("lmcache", "negative_timestamp.jsonl", &["negative_timestamp.jsonl", "line 1, $.timestamp", "expected a unix time in whole microseconds (at most 10000000000000000, year 2286), got -1760587801647311"]),
    ("lmcache", "huge_timestamp.jsonl", &["huge_timestamp.jsonl", "line 2, $.timestamp", "(at most 10000000000000000, year 2286), got 9000000000000000000"]),
    ("lmcache", "far_apart.jsonl", &["far_apart.jsonl", "line 2, $.timestamp", "s after the file's earliest", "line 1", "within 1000000000 s"]),
    ("lmcache", "null_output.jsonl", &["null_output.jsonl", "line 1, $.output", "invalid type: null: expected a string"]),
    ("lmcache", "float_timestamp.jsonl", &["float_timestamp.jsonl", "line 1, $.timestamp", "got 1760587801.647311"]),
    ("lmcache", "empty_session_id.jsonl", &["empty_session_id.jsonl", "line 1, $.session_id", "expected a non-empty string, got \"\""]),
    ("lmcache", "array_row.jsonl", &["array_row.jsonl", "line 1", "expected an LMCache trace row"]),
    ("lmcache", "binary.jsonl", &["binary.jsonl", "line 1", "corrupt gzip stream"]),
    ("lmcache", "nul_bytes.jsonl", &["nul_bytes.jsonl", "line 1, byte offset 0", "a NUL byte (0x00)"]),
    ("openai-log", "empty.jsonl", &["empty.jsonl", "empty file", "expected one recorded request"]),
    ("openai-log", "invalid_json.jsonl", &["invalid_json.jsonl", "line 3, column 82, $.request: invalid JSON: the text ends early (truncated?)"]),
    ("openai-log", "missing_messages.jsonl", &["missing_messages.jsonl", "line 1, $.request", "missing field `messages`"]),
    ("openai-log", "negative_start.jsonl", &["negative_start.jsonl", "line 2, $.start", "expected a non-negative finite number of seconds, got -1767225600"]),
    ("openai-log", "huge_start.jsonl", &["huge_start.jsonl", "line 1, $.start", "expected unix seconds up to 10000000000 (year 2286), got 1e300"]),
    ("openai-log", "far_apart.jsonl", &["far_apart.jsonl", "line 2, $.start", "s after the file's earliest start", "within 1000000000 s"]),
    ("openai-log", "end_before_start.jsonl", &["end_before_start.jsonl", "line 2, $.end", "end 1767225603.5 is before start 1767225604.1"]),
    ("openai-log", "dangling_parent.jsonl", &["dangling_parent.jsonl", "line 3, $.parent_agent_id", "parent agent `planner` of agent `explore` is not in session `s1`"]),
    ("openai-log", "two_roots.jsonl", &["two_roots.jsonl", "line 2", "session `s1` has 2 root agents (`main`, `helper`)", "expected exactly one"]),
    ("openai-log", "parent_cycle.jsonl", &["parent_cycle.jsonl", "$.parent_agent_id", "agent `a` of session `s1` is in a parent cycle"]),
    ("openai-log", "unknown_role.jsonl", &["unknown_role.jsonl", "line 1, $.request.messages[1].role", "expected a role name (system, developer, user, assistant, tool or function), got `critic`"]),
    ("openai-log", "number_content.jsonl", &["number_content.jsonl", "line 1, $.request.messages[0].content", "invalid type: integer `42`: expected message content"]),
    ("openai-log", "binary.jsonl", &["binary.jsonl", "line 1", "not UTF-8 text"]),
    ("openai-log", "header_parent_missing.jsonl", &["header_parent_missing.jsonl", "line 2, $.identity.parent_agent", "parent agent `planner` of agent `kid` has no requests in the capture"]),
    ("openai-log", "header_parent_cycle.jsonl", &["header_parent_cycle.jsonl", "$.identity.parent_agent", "(a cycle)"]),
    ("openai-log", "identity_empty_id.jsonl", &["identity_empty_id.jsonl", "line 1, $.identity.session.id", "expected a non-empty string, got \"\""]),
    ("openai-log", "responses_number_input.jsonl", &["responses_number_input.jsonl", "line 1, $.request.input", "expected a Responses input (a string, or an array of input items)"]),
    ("openai-log", "responses_unknown_role.jsonl", &["responses_unknown_role.jsonl", "line 1, $.request.input[1].role", "got `critic`"]),
    ("weka", "negative_t.json", &["negative_t.json", "$.requests[1].t", "expected a non-negative finite number of seconds (at most 1000000000), got -3"]),
    ("weka", "string_in.json", &["string_in.json", "$.requests[0].in", "invalid type: string", "expected a non-negative integer"]),
    ("weka", "missing_requests.json", &["missing_requests.json", "missing field `requests`"]),
    ("weka", "truncated.json", &["truncated.json", "line 3, column", "$.requests[1]", "invalid JSON", "truncated"]),
    ("weka", "empty.json", &["empty.json", "empty file", "expected a Weka trace"]),
    ("weka", "broken_line2.jsonl", &["broken_line2.jsonl", "line 2", "$.requests[0].out", "invalid JSON"]),
    ("mooncake", "empty.jsonl", &["empty.jsonl: empty file", "expected Mooncake rows"]),
    ("mooncake", "negative_timestamp.jsonl", &["negative_timestamp.jsonl: line 2, $.timestamp:", "expected a non-negative finite number of milliseconds (at most 1000000000000), got -5"]),
    ("mooncake", "string_input_length.jsonl", &["string_input_length.jsonl: line 3, $.input_length:", "invalid type: string \"many\": expected a non-negative integer"]),
    ("mooncake", "missing_output_length.jsonl", &["missing_output_length.jsonl: line 1:", "missing field `output_length`: expected it in a Mooncake row (a JSON object with"]),
    ("mooncake", "missing_input_length.jsonl", &["missing_input_length.jsonl: line 2:", "missing field `input_length` (or `text_input`): expected it in a Mooncake row"]),
    ("mooncake", "missing_timestamp.jsonl", &["missing_timestamp.jsonl: line 2:", "missing field `timestamp`: expected it in a row without session_id"]),
    ("mooncake", "session_without_timestamp.jsonl", &["session_without_timestamp.jsonl: line 1:", "missing field `timestamp`: expected it in the first row of session \"s1\""]),
    ("mooncake", "session_out_of_order.jsonl", &["session_out_of_order.jsonl: line 3, $.timestamp:", "expected timestamps that do not decrease within session \"s1\": 500 ms is before its previous turn at 800 ms (line 2)"]),
    ("mooncake", "huge_delay.jsonl", &["huge_delay.jsonl: line 2, $.delay:", "expected a non-negative finite number of milliseconds"]),
    ("mooncake", "overflow_delay.jsonl", &["overflow_delay.jsonl: line 3, $.delay:", "expected a smaller delay"]),
    ("mooncake", "float_hash_id.jsonl", &["float_hash_id.jsonl: line 1, $.hash_ids[1]:", "expected a hash id"]),
    ("mooncake", "truncated.jsonl", &["truncated.jsonl: line 2, column 73, $.hash_ids:", "invalid JSON: the text ends early (truncated?)"]),
    ("mooncake", "not_an_object.jsonl", &["not_an_object.jsonl: line 1:", "expected a Mooncake row"]),
    ("mooncake", "two_objects.jsonl", &["two_objects.jsonl: line 1, column 79:", "expected one JSON object per line"]),
    ("mooncake", "bool_session.jsonl", &["bool_session.jsonl: line 1, $.session_id:", "expected an id (a string or an integer)"]),
    ("agentic-mooncake", "empty.jsonl", &["empty.jsonl: empty file", "expected agentic Mooncake rows"]),
    ("agentic-mooncake", "duplicate_request_id.jsonl", &["duplicate_request_id.jsonl: line 3, $.request_id:", "duplicate request_id \"r1\" (first on line 1): expected each request_id once"]),
    ("agentic-mooncake", "unknown_wait_for.jsonl", &["unknown_wait_for.jsonl: line 7, $.wait_for[1]:", "no row has request_id \"r9\""]),
    ("agentic-mooncake", "cycle.jsonl", &["cycle.jsonl: line 2, $.wait_for[0]:", "wait_for forms a cycle (\"r2\" -> \"r4\" -> \"r3\" -> \"r2\", each waiting for the next): expected"]),
    ("agentic-mooncake", "self_wait.jsonl", &["self_wait.jsonl: line 2, $.wait_for[1]:", "cycle (\"r2\" -> \"r2\""]),
    ("agentic-mooncake", "no_timestamp.jsonl", &["no_timestamp.jsonl: line 2:", "missing field `timestamp`: expected it in a row without `wait_for`"]),
    ("agentic-mooncake", "empty_wait_for_no_timestamp.jsonl", &["empty_wait_for_no_timestamp.jsonl: line 2:", "in a row without `wait_for`"]),
    ("agentic-mooncake", "negative_delay.jsonl", &["negative_delay.jsonl: line 2, $.delay:", "expected a non-negative finite number of milliseconds"]),
    ("agentic-mooncake", "huge_tool_wait.jsonl", &["huge_tool_wait.jsonl: line 2, $.tool_wait_ms:", "got 1e20"]),
    ("agentic-mooncake", "overflow_start.jsonl", &["overflow_start.jsonl: line 3:", "past the largest time a trace may state"]),
    ("agentic-mooncake", "wait_for_not_list.jsonl", &["wait_for_not_list.jsonl: line 2, $.wait_for:", "invalid type: string \"r1\": expected a sequence"]),
    ("agentic-mooncake", "float_request_id.jsonl", &["float_request_id.jsonl: line 1, $.request_id:", "expected an id (a string or an integer)"]),
    ("agentic-mooncake", "missing_session_id.jsonl", &["missing_session_id.jsonl: line 2:", "missing field `session_id`: expected it in an agentic Mooncake row"]),
    ("agentic-mooncake", "missing_request_id.jsonl", &["missing_request_id.jsonl: line 1:", "missing field `request_id`"]),
    ("agentic-mooncake", "string_output_length.jsonl", &["string_output_length.jsonl: line 1, $.output_length:", "expected a non-negative integer"]),
    ("agentic-mooncake", "broken_json.jsonl", &["broken_json.jsonl: line 2, column", "invalid JSON"]),
    ("dynamo", "empty.jsonl", &["empty.jsonl: empty file", "expected Dynamo request-trace records"]),
    ("dynamo", "wrong_schema.jsonl", &["wrong_schema.jsonl: line 2, $.schema:", "\"dynamo.agent.trace.v1\": expected \"dynamo.request.trace.v1\""]),
    ("dynamo", "unknown_event.jsonl", &["unknown_event.jsonl: line 1, $.event_type:", "\"request_start\": expected request_end, tool_start, tool_end or tool_error"]),
    ("dynamo", "missing_agent_context.jsonl", &["missing_agent_context.jsonl: line 2, $.agent_context:", "expected the agent context with `session_id`"]),
    ("dynamo", "missing_received.jsonl", &["missing_received.jsonl: line 1, $.request.request_received_ms:", "expected when the request was received"]),
    ("dynamo", "missing_output_tokens.jsonl", &["missing_output_tokens.jsonl: line 1, $.request.output_tokens:", "expected the request's output token count"]),
    ("dynamo", "hash_count.jsonl", &["hash_count.jsonl: line 1, $.request.replay.input_sequence_hashes:", "2 hashes: expected 3 (input_length 40 in blocks of 16, rounded up)"]),
    ("dynamo", "block_size_changes.jsonl", &["block_size_changes.jsonl: line 2, $.request.replay.trace_block_size:", "64: expected the same block size on every record (16 on line 1)"]),
    ("dynamo", "zero_block_size.jsonl", &["zero_block_size.jsonl: line 1, $.request.replay.trace_block_size:", "expected a positive number of tokens per block"]),
    ("dynamo", "string_hash.jsonl", &["string_hash.jsonl: line 1, $.request.replay.input_sequence_hashes[0]:", "invalid type: string \"0x1f\": expected a sequence hash"]),
    ("dynamo", "negative_total_time.jsonl", &["negative_total_time.jsonl: line 1, $.request.total_time_ms:", "expected a non-negative finite number of milliseconds", "got -5"]),
    ("dynamo", "unknown_parent.jsonl", &["unknown_parent.jsonl: line 2, $.agent_context.parent_session_id:", "\"s9\": expected the session_id of a session in this file"]),
    ("dynamo", "parent_cycle.jsonl", &["parent_cycle.jsonl: line 1, $.agent_context.parent_session_id:", "session \"a\" is its own ancestor"]),
    ("dynamo", "two_parents.jsonl", &["two_parents.jsonl: line 4, $.agent_context.parent_session_id:", "\"p2\": expected the parent this session named on line 3 (\"p1\")"]),
    ("dynamo", "far_apart.jsonl", &["far_apart.jsonl: line 2, $.request.request_received_ms:", "more than 1000000000 s from its tree's first request"]),
    ("dynamo", "no_tokens.jsonl", &["no_tokens.jsonl: line 1, $.request:", "no `replay.input_length` and no `input_tokens`"]),
    ("dynamo", "empty_session_id.jsonl", &["empty_session_id.jsonl: line 1, $.agent_context.session_id:", "expected a non-empty string"]),
    ("dynamo", "truncated.jsonl", &["truncated.jsonl: line 2, column 200", "invalid JSON: the text ends early (truncated?)"]),
    ("arbor", "truncated.jsonl", &["line 2, column", "invalid JSON: the text ends early (truncated?)"]),
    ("arbor", "string_start.jsonl", &["line 1, $.agents[0].turns[0].start_ns", "invalid type: string \"soon\": expected a non-negative integer number of nanoseconds"]),
    ("arbor", "missing_agents.jsonl", &["line 1:", "missing field `agents`: expected it in an arbor tree"]),
    ("arbor", "unknown_field.jsonl", &["line 1, $.agents[0].turns[0]", "unknown field `colour`: expected one of `start_ns`"]),
    ("arbor", "unknown_kind.jsonl", &["line 1, $.agents[0].kind", "unknown value `leaf`: expected one of `root`, `blocking`, `background`"]),
    ("arbor", "version_2.jsonl", &["line 1, $.arbor", "expected format version 1, got 2"]),
    ("arbor", "edge_to_missing_turn.jsonl", &["line 1, $.edges[0].to", "agent 0 (`root`) has 2 turns, there is no turn 9"]),
    ("arbor", "huge_start.jsonl", &["line 1, $.agents[0].turns[0].start_ns", "(at most 1000000000000000000), got 2000000000000000000"]),
    ("arbor", "empty.jsonl", &["empty file: expected one arbor tree"]),
    ("tracelab", "empty.jsonl", &["empty.jsonl: empty file", "expected TraceLab rounds"]),
    ("tracelab", "array_row.jsonl", &["array_row.jsonl: line 1:", "invalid type: array: expected a TraceLab round"]),
    ("tracelab", "missing_session_id.jsonl", &["missing_session_id.jsonl: line 2:", "missing field `session_id`: expected it in a TraceLab round"]),
    ("tracelab", "empty_session_id.jsonl", &["empty_session_id.jsonl: line 1, $.session_id:", "expected a non-empty string"]),
    ("tracelab", "missing_timing_events.jsonl", &["missing_timing_events.jsonl: line 1:", "missing field `timing_events`"]),
    ("tracelab", "events_not_a_list.jsonl", &["events_not_a_list.jsonl: line 1, $.timing_events:", "invalid type: map: expected a sequence"]),
    ("tracelab", "number_event_type.jsonl", &["number_event_type.jsonl: line 2, $.timing_events[2].event_type:", "expected an event type"]),
    ("tracelab", "bad_timestamp.jsonl", &["bad_timestamp.jsonl: line 1, $.timing_events[1].timestamp:", "expected an RFC 3339 time", "got \"2026-06-01 05:40\""]),
    ("tracelab", "no_timestamps.jsonl", &["no_timestamps.jsonl: line 1, $.timing_events:", "no event with a timestamp: expected at least one to place the session's first round"]),
    ("tracelab", "out_of_order.jsonl", &["out_of_order.jsonl: line 2, $.timing_events:", "round 1 starts 3569.213 s before round 0 (line 1): expected a session's rounds in time order"]),
    ("tracelab", "string_tokens.jsonl", &["string_tokens.jsonl: line 1, $.input_tokens_total:", "invalid type: string \"32,272\": expected a non-negative integer"]),
    ("tracelab", "negative_output.jsonl", &["negative_output.jsonl: line 2, $.output_tokens:", "got -5"]),
    ("tracelab", "huge_round_index.jsonl", &["huge_round_index.jsonl: line 1, $.round_index:", "of at most 4294967295, got 1e20"]),
    ("tracelab", "far_apart.jsonl", &["far_apart.jsonl: line 2, $.timing_events:", "more than 1000000000 s after the file's first round"]),
    ("tracelab", "truncated.jsonl", &["truncated.jsonl: line 2, column 300", "invalid JSON: the text ends early (truncated?)"]),
    ("otel-genai", "empty.jsonl", &["empty.jsonl: empty file", "expected an OTLP trace export"]),
    ("otel-genai", "not_an_export.jsonl", &["not_an_export.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[0]:", "missing field `traceId`"]),
    ("otel-genai", "base64_span_id.jsonl", &["base64_span_id.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[1].spanId:", "expected a span id (16 hex digits), got \"7uGbfsPBsXQ=\""]),
    ("otel-genai", "iso_time.jsonl", &["iso_time.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano:", "expected a unix time in nanoseconds"]),
    ("otel-genai", "end_before_start.jsonl", &["end_before_start.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[2].endTimeUnixNano:", "is before startTimeUnixNano"]),
    ("otel-genai", "missing_input_tokens.jsonl", &["missing_input_tokens.jsonl: line 2, $.resourceSpans[0].scopeSpans[0].spans[1].attributes:", "no `gen_ai.usage.input_tokens` on a `chat` span"]),
    ("otel-genai", "string_tokens.jsonl", &["string_tokens.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[1].attributes:", "attribute `gen_ai.usage.input_tokens` (attributes[3]): expected a token count", "got stringValue \"1200\""]),
    ("otel-genai", "negative_tokens.jsonl", &["negative_tokens.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[3].attributes:", "got intValue -5"]),
    ("otel-genai", "duplicate_span.jsonl", &["duplicate_span.jsonl: line 2, $.resourceSpans[0].scopeSpans[0].spans[1].spanId:", "appears twice", "first on line 1"]),
    ("otel-genai", "parent_cycle.jsonl", &["parent_cycle.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[0].parentSpanId:", "is its own ancestor"]),
    ("otel-genai", "no_model_calls.jsonl", &["no_model_calls.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[0]:", "no model call among its 2 spans"]),
    ("otel-genai", "far_apart.jsonl", &["far_apart.jsonl: line 2, $.resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano:", "more than 1000000000 s after the file's first model call"]),
    ("otel-genai", "too_long.jsonl", &["too_long.jsonl: line 1, $.resourceSpans[0].scopeSpans[0].spans[3].endTimeUnixNano:", "lasts past the largest time"]),
    ("otel-genai", "truncated.json", &["truncated.json: line 35, column 6", "invalid JSON: the text ends early (truncated?)"]),
    ("otel-genai", "missing_end_time.json", &["missing_end_time.json: line 111, $.resourceSpans[0].scopeSpans[0].spans[2]:", "missing field `endTimeUnixNano`"]),
    ("otel-genai", "missing_output_tokens.json", &["missing_output_tokens.json: line 113, $.resourceSpans[0].scopeSpans[0].spans[3].attributes:", "no `gen_ai.usage.output_tokens` on a `chat` span"]),
    ("aiperf-graph", "empty.jsonl", &["empty.jsonl: empty file", "expected AIPerf DAG conversations"]),
    ("aiperf-graph", "no_turns.jsonl", &["no_turns.jsonl: line 1, $.turns:", "[]: expected at least one turn"]),
    ("aiperf-graph", "empty_messages.jsonl", &["empty_messages.jsonl: line 1, $.turns[0].messages:", "expected at least one message"]),
    ("aiperf-graph", "empty_session_id.jsonl", &["empty_session_id.jsonl: line 1, $.session_id:", "expected a non-empty string, got \"\""]),
    ("aiperf-graph", "duplicate_session.jsonl", &["duplicate_session.jsonl: line 3, $.session_id:", "duplicate session_id \"a\" (first on line 1)"]),
    ("aiperf-graph", "unknown_child.jsonl", &["unknown_child.jsonl: line 1, $.turns[0].spawns[0]:", "\"helper\": expected the session_id of a conversation in this file"]),
    ("aiperf-graph", "cycle.jsonl", &["cycle.jsonl: line 3, $.turns[0].spawns[0]:", "branches form a cycle (\"b\" -> \"c\" -> \"b\")"]),
    ("aiperf-graph", "forked_twice.jsonl", &["forked_twice.jsonl: line 2, $.turns[0].forks[0]:", "\"c\" is forked twice (first at line 1, $.turns[0].forks[0])"]),
    ("aiperf-graph", "fork_before_last.jsonl", &["fork_before_last.jsonl: line 1, $.turns[0].forks[0]:", "a foreground fork before the conversation's last turn"]),
    ("aiperf-graph", "join_at_out_of_range.jsonl", &["join_at_out_of_range.jsonl: line 1, $.turns[0].spawns[0].join_at:", "5: expected a turn after the spawning turn 0 and before the end (2 turns)"]),
    ("aiperf-graph", "zero_max_tokens.jsonl", &["zero_max_tokens.jsonl: line 1, $.turns[0].max_tokens:", "expected a positive integer, got 0"]),
    ("aiperf-graph", "bool_max_tokens.jsonl", &["bool_max_tokens.jsonl: line 1, $.turns[0].max_tokens:", "invalid type: boolean `true`"]),
    ("aiperf-graph", "negative_delay.jsonl", &["negative_delay.jsonl: line 1, $.turns[1].delay:", "expected a non-negative finite number of milliseconds", "got -250"]),
    ("aiperf-graph", "huge_delays.jsonl", &["huge_delays.jsonl: line 1:", "the delays add up past the largest time a trace may state"]),
    ("aiperf-graph", "unknown_field.jsonl", &["unknown_field.jsonl: line 1, $.turns[0].temperature:", "unknown field `temperature`: expected one of `messages`"]),
    ("aiperf-graph", "unknown_role.jsonl", &["unknown_role.jsonl: line 1, $.turns[0].messages[0].role:", "got `critic`"]),
    ("aiperf-graph", "system_later.jsonl", &["system_later.jsonl: line 1, $.turns[1].messages[0].role:", "a `system` message after the prompt's start"]),
    ("aiperf-graph", "orchestrator.jsonl", &["orchestrator.jsonl: line 1, $.orchestrator:", "an orchestrator conversation"]),
    ("aiperf-graph", "reserved_context_mode.jsonl", &["reserved_context_mode.jsonl: line 1, $.context_mode:", "got `message_array_without_responses` (reserved by AIPerf"]),
    ("aiperf-graph", "truncated.jsonl", &["truncated.jsonl: line 2, column", "invalid JSON: the text ends early (truncated?)"]),
];

#[test]
fn every_bad_file_names_its_place_and_expectation() {
    for (format, file, parts) in CORPUS {
        let path = testdata(&format!("bad/{format}")).join(file);
        let format: Format = format.parse().expect("a format name");
        let message = match load_path(&path, Some(format)) {
            Ok(_) => panic!("{} is accepted", path.display()),
            Err(e) => e.to_string(),
        };
        assert_contains(&message, &[file]);
        assert_contains(&message, parts);
    }
}

#[test]
fn every_bad_file_has_a_row() {
    for format in Format::ALL {
        let dir = testdata(&format!("bad/{}", format.name()));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == "README.md" {
                continue;
            }
            assert!(
                CORPUS
                    .iter()
                    .any(|(f, file, _)| *f == format.name() && *file == name),
                "{} has no row in CORPUS",
                Path::new(&dir).join(name).display()
            );
        }
    }
}

/// Fixtures cut short at every `step` bytes: every prefix must be read (or
/// rejected) by its format's reader without a panic, and every detector
/// must answer on it.
#[test]
fn never_panics_on_truncations() {
    let fixtures = [
        (Format::Weka, "weka-kv-cache-tester/trace_0187.json", 7),
        (Format::Abench, "abench/sample.jsonl", 97),
        (Format::Abench, "abench/sample.jsonl.zst", 97),
        (
            Format::Lmcache,
            "lmcache-agent-trace/taubench/22ffaaf33001ec7197ccd612e03d428e.jsonl",
            53,
        ),
        (Format::OpenaiLog, "openai-log/sample.jsonl", 61),
        (Format::OpenaiLog, "openai-log/identity.jsonl", 67),
        (Format::OpenaiLog, "openai-log/responses.jsonl", 71),
        (Format::Dynamo, "dynamo/sample.jsonl", 41),
        (Format::Tracelab, "tracelab/round_trace.jsonl", 97),
        (Format::OtelGenai, "otel-genai/sample.jsonl", 53),
        (Format::OtelGenai, "otel-genai/sample.json", 131),
        (Format::AiperfGraph, "aiperf-graph/sample.dag.jsonl", 29),
    ];
    for (format, fixture, step) in fixtures {
        let bytes = std::fs::read(testdata(fixture)).expect("read a fixture");
        let mut cut = 0;
        while cut < bytes.len() {
            if let Some(prefix) = bytes.get(..cut) {
                let path = scratch_file("cut", prefix);
                let _ = load_path(&path, Some(format));
                std::fs::remove_file(&path).ok();
                let prefix = Prefix::of(prefix);
                for row in &FORMATS {
                    let _ = (row.looks_like)(&prefix);
                }
            }
            cut += step;
        }
    }
}
