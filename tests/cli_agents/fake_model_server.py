"""A scripted fake model server for running the real coding CLIs offline.

It speaks Anthropic Messages SSE (`POST /v1/messages`, for claude and pi) and OpenAI Responses SSE
(`POST /v1/responses`, for codex). It is stateless: the prompt carries the scenario
(`TASK:<edit|answer|context|error|hang> RUN:<id> FILE:<abs path of kernel.py>`), and the step within the turn
is the number of tool results after the last prompt, so a resumed or restarted CLI gets the same
answers. `edit` makes the CLI read `kernel.py` and then edit it with its own tools; `answer` replies
with the number of task prompts it saw (so a resume can be told from a fresh session); `context` answers
"ok" and logs the whole request body (to check what the CLI put in its context); `error` returns
HTTP 500; `hang` never answers. Each request is appended to a JSONL log with the exact usage sent.

Run: `python fake_model_server.py --log requests.jsonl --port-file port` (binds 127.0.0.1:0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

OLD_TEXT = "return x + 0  # TODO speed up"
NEW_TEXT = "return x + 0  # optimized by the fake model"
TASK_RE = re.compile(r"TASK:(\w+)")
RUN_RE = re.compile(r"RUN:([\w-]+)")
FILE_RE = re.compile(r"FILE:(\S+)")
_LOG_LOCK = threading.Lock()
MAX_LOGGED_BODY = 1_000_000


def anthropic_usage(step: int) -> dict[str, int]:
    return {
        "input_tokens": 1200 + 31 * step,
        "output_tokens": 40 + 3 * step,
        "cache_read_input_tokens": 500 + 11 * step,
        "cache_creation_input_tokens": 64 + step,
    }


def responses_usage(step: int) -> dict[str, Any]:
    inp, cached, out = 1500 + 40 * step, 300 + 5 * step, 50 + 2 * step
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


def scenario(items: list[dict[str, Any]], result_types: tuple[str, ...]) -> dict[str, Any]:
    """Task, run id, file and step (tool results since the last task prompt) of one request."""
    last, task, run, file = -1, None, None, None
    prompts = 0
    for i, item in enumerate(items):
        if item.get("role") != "user":
            continue
        text = _texts(item.get("content"))
        m = TASK_RE.search(text)
        if m:
            prompts += 1
            last, task = i, m[1]
            run = (RUN_RE.search(text) or [None, None])[1]
            file = (FILE_RE.search(text) or [None, None])[1]
    step = 0
    for item in items[last + 1 :]:
        if item.get("type") in result_types:
            step += 1
        content = item.get("content")
        if isinstance(content, list):
            step += sum(1 for b in content if isinstance(b, dict) and b.get("type") in result_types)
    return {"task": task, "run": run, "file": file, "step": step, "prompts": prompts}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path: Path

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _record(self, entry: dict[str, Any]) -> None:
        entry["time"] = time.time()
        with _LOG_LOCK, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def do_GET(self) -> None:
        self._record({"method": "GET", "path": self.path})
        body = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        path = self.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            return self._json(200, {"input_tokens": 10})
        if path.endswith("/messages"):
            return self._anthropic(body)
        if path.endswith("/responses"):
            return self._responses(body)
        self._record({"method": "POST", "path": self.path, "unhandled": True})
        return self._json(404, {"error": {"message": f"fake server: no route {path}"}})

    # --- helpers ----------------------------------------------------------------------------------
    def _json(self, status: int, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _sse(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True

    def _hang(self) -> None:
        while True:  # never answer; the client's timeout (or our test's kill) ends it
            time.sleep(1)

    def _common(self, api: str, sc: dict[str, Any], usage: dict[str, Any] | None, body: Any = None) -> None:
        extra = {"body": json.dumps(body)[:MAX_LOGGED_BODY]} if sc["task"] == "context" else {}
        self._record(
            {
                **extra,
                "method": "POST",
                "path": self.path,
                "api": api,
                **sc,
                "usage_sent": usage,
                "session_header": self.headers.get("x-claude-code-session-id"),
                "has_auth": bool(self.headers.get("x-api-key") or self.headers.get("authorization")),
            }
        )

    # --- Anthropic Messages -----------------------------------------------------------------------
    def _anthropic(self, body: dict[str, Any]) -> None:
        sc = scenario(body.get("messages") or [], ("tool_result",))
        task, step = sc["task"], sc["step"]
        if task == "error":
            self._common("anthropic", sc, None)
            return self._json(
                500, {"type": "error", "error": {"type": "api_error", "message": "fake failure"}}
            )
        if task == "hang":
            self._common("anthropic", sc, None)
            return self._hang()
        usage = (
            anthropic_usage(step)
            if task
            else {
                "input_tokens": 3,
                "output_tokens": 2,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            }
        )
        tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
        block = self._anthropic_block(task, step, sc, tools)
        self._common("anthropic", sc, usage, body)
        msg_id = f"msg_{sc['run']}_{step}_{int(time.time() * 1e6)}"
        start_usage = {**usage, "output_tokens": 1}
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", "fake"),
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    },
                },
            )
        ]
        if block["type"] == "text":
            events += self._text_block(0, block["text"])
            stop, last = "end_turn", 0
        else:  # a text block, then the tool call: Claude repeats the message usage for each block
            events += self._text_block(0, f"Step {step}: calling {block['name']}.")
            events += [("content_block_stop", {"type": "content_block_stop", "index": 0})]
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 1,
                        "content_block": {
                            "type": "tool_use",
                            "id": f"toolu_{step}_{msg_id[-6:]}",
                            "name": block["name"],
                            "input": {},
                        },
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                    },
                ),
            ]
            stop, last = "tool_use", 1
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": last}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._sse(events)

    @staticmethod
    def _text_block(index: int, text: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
        ]

    @staticmethod
    def _anthropic_block(
        task: str | None, step: int, sc: dict[str, Any], tools: dict[str, Any]
    ) -> dict[str, Any]:
        if task == "answer":
            return {"type": "text", "text": f"ANSWER: task prompts seen = {sc['prompts']}"}
        if task != "edit":
            return {"type": "text", "text": "ok"}
        read = "Read" if "Read" in tools else "read"
        edit = "Edit" if "Edit" in tools else "edit"
        props = ((tools.get(edit) or {}).get("input_schema") or {}).get("properties") or {}
        path_key = "file_path" if "file_path" in props else "path"
        file = sc["file"]
        if step == 0:
            return {"type": "tool_use", "name": read, "input": {path_key: file}}
        if step == 1:
            if "edits" in props:
                args: dict[str, Any] = {path_key: file, "edits": [{"oldText": OLD_TEXT, "newText": NEW_TEXT}]}
            elif "old_string" in props:
                args = {path_key: file, "old_string": OLD_TEXT, "new_string": NEW_TEXT}
            else:
                args = {path_key: file, "oldText": OLD_TEXT, "newText": NEW_TEXT}
            return {"type": "tool_use", "name": edit, "input": args}
        return {"type": "text", "text": "DONE: kernel.py edited"}

    # --- OpenAI Responses -------------------------------------------------------------------------
    def _responses(self, body: dict[str, Any]) -> None:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        sc = scenario(items, ("function_call_output", "custom_tool_call_output"))
        task, step = sc["task"], sc["step"]
        if task == "error":
            self._common("responses", sc, None)
            return self._json(500, {"error": {"type": "server_error", "message": "fake failure"}})
        if task == "hang":
            self._common("responses", sc, None)
            return self._hang()
        usage = responses_usage(step)
        self._common("responses", sc, usage, body)
        rid = f"resp_{sc['run']}_{step}_{int(time.time() * 1e6)}"
        item = self._responses_item(task, step, sc, rid)
        response = {"id": rid, "object": "response", "status": "completed", "model": body.get("model")}
        self._sse(
            [
                (
                    "response.created",
                    {"type": "response.created", "response": {**response, "status": "in_progress"}},
                ),
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": 0, "item": item},
                ),
                (
                    "response.completed",
                    {"type": "response.completed", "response": {**response, "usage": usage}},
                ),
            ]
        )

    @staticmethod
    def _responses_item(task: str | None, step: int, sc: dict[str, Any], rid: str) -> dict[str, Any]:
        def message(text: str) -> dict[str, Any]:
            return {
                "type": "message",
                "id": f"msg_{rid}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }

        if task == "answer":
            return message(f"ANSWER: task prompts seen = {sc['prompts']}")
        if task != "edit":
            return message("ok")
        if step == 0:
            return {
                "type": "function_call",
                "id": f"fc_{rid}",
                "call_id": f"call_{rid}",
                "status": "completed",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": f"cat {sc['file']}"}),
            }
        if step == 1:
            patch = (
                f"*** Begin Patch\n*** Update File: {sc['file']}\n@@\n-    {OLD_TEXT}\n+    {NEW_TEXT}\n"
                "*** End Patch\n"
            )
            return {
                "type": "custom_tool_call",
                "id": f"ctc_{rid}",
                "call_id": f"call_{rid}",
                "status": "completed",
                "name": "apply_patch",
                "input": patch,
            }
        return message("DONE: kernel.py edited")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
