import json
sysmsg = "You are a coding agent in the repository `dateparse`. Use the tools to read files and run tests; keep edits minimal."
user = "The test `test_parse_utc_suffix` fails: `parse(\"2026-01-01T12:00:00Z\")` raises ValueError. Please fix it."
read_schema = {"type": "object", "properties": {"path": {"type": "string", "description": "Path relative to the repository root."}}, "required": ["path"]}
tests_schema = {"type": "object", "properties": {"path": {"type": "string", "description": "A test file or directory."}, "keyword": {"type": "string", "description": "Only tests whose name contains this."}}, "required": []}
chat_tools = [
  {"type": "function", "function": {"name": "read_file", "description": "Read a text file of the repository.", "parameters": read_schema}},
  {"type": "function", "function": {"name": "run_tests", "description": "Run pytest and return its summary.", "parameters": tests_schema}},
]
msg_tools = [
  {"name": "read_file", "description": "Read a text file of the repository.", "input_schema": read_schema},
  {"name": "run_tests", "description": "Run pytest and return its summary.", "input_schema": tests_schema},
]
iso = "from datetime import datetime\n\n\ndef parse(s):\n    return datetime.fromisoformat(s)\n"
test_out = "FAILED tests/test_iso.py::test_parse_utc_suffix - ValueError: Invalid isoformat string: '2026-01-01T12:00:00Z'\n1 failed, 14 passed in 0.31s"
test_src = "def test_parse_utc_suffix():\n    assert parse(\"2026-01-01T12:00:00Z\").tzinfo is not None\n"
t0 = 1767225600
a1_text = None
a1_calls = [{"id": "call_7hQ2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/dateparse/iso.py\"}"}}]
a2_text = "`fromisoformat` before Python 3.11 rejects a `Z` suffix. I'll run the failing test and read it."
a2_calls = [
  {"id": "call_Lm4x", "type": "function", "function": {"name": "run_tests", "arguments": "{\"path\": \"tests/test_iso.py\", \"keyword\": \"utc_suffix\"}"}},
  {"id": "call_9vPe", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"tests/test_iso.py\"}"}},
]
a3_text = "The test expects an aware datetime. I'll map a trailing `Z` to `+00:00` before calling `fromisoformat`."
common = {"session_id": "tools-chat", "agent_id": "main", "infer": False, "method": "POST", "path": "/v1/chat/completions", "stream": False, "status": 200}
def chat_req(messages):
    return {"model": "gpt-4.1-mini", "messages": messages, "tools": chat_tools, "tool_choice": "auto", "parallel_tool_calls": True, "stream": False}
m_sys = {"role": "system", "content": sysmsg}
m_user = {"role": "user", "content": user}
m_a1 = {"role": "assistant", "content": a1_text, "tool_calls": a1_calls}
m_t1 = {"role": "tool", "tool_call_id": "call_7hQ2", "content": iso}
m_a2 = {"role": "assistant", "content": a2_text, "tool_calls": a2_calls}
m_t2 = {"role": "tool", "tool_call_id": "call_Lm4x", "content": test_out}
m_t3 = {"role": "tool", "tool_call_id": "call_9vPe", "content": test_src}
def completion(i, content, calls, pt, ct, finish):
    msg = {"role": "assistant", "content": content}
    if calls: msg["tool_calls"] = calls
    return {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": t0, "model": "gpt-4.1-mini", "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}}
lines = []
def line(start, end, req, resp):
    l = {"start": t0 + start, "end": t0 + end}
    l.update(common)
    l["request"] = req
    l["response"] = resp
    return l
lines.append(line(0.0, 1.25, chat_req([m_sys, m_user]), completion(1, None, a1_calls, 318, 21, "tool_calls")))
lines.append(line(1.5, 3.0, chat_req([m_sys, m_user, m_a1, m_t1]), completion(2, a2_text, a2_calls, 377, 64, "tool_calls")))
lines.append(line(5.0, 6.75, chat_req([m_sys, m_user, m_a1, m_t1, m_a2, m_t2, m_t3]), completion(3, a3_text, None, 506, 27, "stop")))
with open("tools-chat.jsonl", "w") as f:
    for l in lines: f.write(json.dumps(l) + "\n")

# Messages form
mc = {"session_id": "tools-messages", "agent_id": "main", "infer": False, "method": "POST", "path": "/v1/messages", "stream": False, "status": 200}
system = [{"type": "text", "text": sysmsg}]
def mreq(messages):
    return {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": system, "tools": msg_tools, "tool_choice": {"type": "auto"}, "messages": messages}
b_a1 = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "src/dateparse/iso.py"}}]}
b_r1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": iso}]}
b_a2 = {"role": "assistant", "content": [{"type": "text", "text": a2_text}, {"type": "tool_use", "id": "toolu_02B", "name": "run_tests", "input": {"path": "tests/test_iso.py", "keyword": "utc_suffix"}}, {"type": "tool_use", "id": "toolu_02C", "name": "read_file", "input": {"path": "tests/test_iso.py"}}]}
b_r2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02B", "content": [{"type": "text", "text": test_out}]}, {"type": "tool_result", "tool_use_id": "toolu_02C", "content": test_src}, {"type": "text", "text": "Keep the error message for other bad inputs."}]}
def message(i, blocks, usage, stop):
    return {"id": f"msg_0{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
u = lambda i, r, c, o: {"input_tokens": i, "cache_read_input_tokens": r, "cache_creation_input_tokens": c, "output_tokens": o}
ml = []
def mline(start, end, req, resp):
    l = {"start": t0 + start, "end": t0 + end}
    l.update(mc); l["request"] = req; l["response"] = resp
    return l
ml.append(mline(0.0, 1.5, mreq([{"role": "user", "content": user}]), message(1, b_a1["content"], u(702, 0, 0, 58), "tool_use")))
ml.append(mline(2.0, 3.75, mreq([{"role": "user", "content": user}, b_a1, b_r1]), message(2, b_a2["content"], u(61, 0, 702, 121), "tool_use")))
ml.append(mline(6.0, 7.5, mreq([{"role": "user", "content": user}, b_a1, b_r1, b_a2, b_r2]), message(3, [{"type": "text", "text": a3_text}], u(214, 763, 0, 33), "end_turn")))
with open("tools-messages.jsonl", "w") as f:
    for l in ml: f.write(json.dumps(l) + "\n")
