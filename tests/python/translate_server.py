"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for the translate tests:
each POST /v1/chat/completions takes the next step of its script (an answer, an HTTP error
with headers, or a delay longer than the client's timeout) and records the request. Real HTTP:
the `openai` client library talks to it as it would to any endpoint."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional


# Characters per token of the estimate `answer(..., estimate=True)` makes: the 3.5-4 of
# code-heavy English text for the tokenizers of current models (docs/translate.md).
CHARS_PER_TOKEN = 4


def answer(content: Optional[str], prompt_tokens: int = 1000, completion_tokens: int = 100,
           finish_reason: str = "stop", estimate: bool = False) -> Dict[str, Any]:
    """A step: the model answers `content`. With `estimate`, the usage reported is estimated
    from the request's and the answer's characters (CHARS_PER_TOKEN) instead of the counts
    given, as a replayed transcript's would be."""
    return {"kind": "answer", "content": content, "finish_reason": finish_reason,
            "estimate": estimate,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def estimated_usage(body: Dict[str, Any], content: Optional[str]) -> Dict[str, int]:
    """Tokens of a request's messages and of an answer, estimated from their characters."""
    chars = sum(len(m.get("content") or "") for m in body.get("messages") or [])
    prompt = -(-chars // CHARS_PER_TOKEN)
    completion = -(-len(content or "") // CHARS_PER_TOKEN)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def error(status: int, headers: Optional[Dict[str, str]] = None,
          message: str = "scripted error") -> Dict[str, Any]:
    """A step: an HTTP error (429 with Retry-After, 500, ...)."""
    return {"kind": "error", "status": status, "headers": headers or {}, "message": message}


def stall(seconds: float) -> Dict[str, Any]:
    """A step: no answer for `seconds` (longer than the client's timeout)."""
    return {"kind": "stall", "seconds": seconds}


class ScriptedServer:
    """`with ScriptedServer() as s: s.script = [...]; ... s.requests`."""

    def __init__(self):
        self.script: List[Dict[str, Any]] = []
        # Scripts by a text the first user message holds (a source's file name): concurrent
        # translations (a batch) each get their own.
        self.routes: Dict[str, List[Dict[str, Any]]] = {}
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers),
                                            "body": body, "time": time.monotonic()})
                    step = server.next_step(body)
                try:
                    self._reply(step, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a stall)

            def _reply(self, step, body):
                if step["kind"] == "stall":
                    time.sleep(step["seconds"])
                    step = error(504, message="stalled")
                if step["kind"] == "error":
                    payload = {"error": {"message": step["message"], "type": "scripted",
                                         "code": step["status"]}}
                    self._send(step["status"], payload, step["headers"])
                    return
                payload = {"id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                           "created": 0, "model": body.get("model", "scripted"),
                           "choices": [{"index": 0, "finish_reason": step["finish_reason"],
                                        "message": {"role": "assistant",
                                                    "content": step["content"]}}],
                           "usage": estimated_usage(body, step["content"]) if step.get("estimate")
                           else step["usage"]}
                self._send(200, payload, {})

            def _send(self, status, payload, headers):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def next_step(self, body: Dict[str, Any]) -> Dict[str, Any]:
        messages = body.get("messages") or []
        first_user = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        for key, steps in self.routes.items():
            if key in first_user:
                return steps.pop(0) if steps else error(500, message=f"route {key} exhausted")
        return self.script.pop(0) if self.script else error(500, message="script exhausted")

    def reset(self) -> None:
        with self.lock:
            self.script, self.routes, self.requests = [], {}, []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
