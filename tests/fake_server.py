"""A small local OpenAI-compatible server for what no real server here produces:
llama.cpp's and vLLM's response shapes, HTTP errors, malformed or stalled
streams. Each test sets `server.script`; requests are kept for assertions."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Script:
    models: dict | None = None  # the /v1/models body
    server_header: str = "fake"
    props: dict | None = None  # llama.cpp's /props body
    status: int = 200  # of the chat/completions answer
    error_body: str = ""
    events: list = field(default_factory=list)  # dicts, raw str lines, ("sleep", s) or "CUT"
    done: bool = True  # end with `data: [DONE]`
    json_body: dict | None = None  # a non-streamed answer


class FakeServer:
    def __init__(self):
        self.script = Script()
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        self.client_gone = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def version_string(self):
                return outer.script.server_header

            def _json(self, status: int, obj) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                outer.requests.append({"path": self.path, "headers": dict(self.headers)})
                s = outer.script
                if self.path.endswith("/models") and s.models is not None:
                    return self._json(200, s.models)
                if self.path == "/props" and s.props is not None:
                    return self._json(200, s.props)
                self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                outer.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                s = outer.script
                if s.status != 200:
                    raw = s.error_body.encode()
                    self.send_response(s.status)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                if not body.get("stream"):
                    return self._json(200, s.json_body or {"choices": []})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for ev in s.events:
                        if isinstance(ev, tuple) and ev[0] == "sleep":
                            time.sleep(ev[1])
                            continue
                        if ev == "CUT":
                            self.wfile.flush()
                            self.close_connection = True
                            return
                        line = ev if isinstance(ev, str) else f"data: {json.dumps(ev)}"
                        self.wfile.write(f"{line}\n\n".encode())
                        self.wfile.flush()
                    if s.done:
                        self.wfile.write(b"data: [DONE]\n\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    outer.client_gone.set()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(  # close() waits one poll interval: 0.05 s, not 0.5
            target=self.httpd.serve_forever, args=(0.05,), daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# -- the shapes real servers send (from their documentation and source) --------------
def _bytes(s: str) -> list[int]:
    return list(s.encode("utf-8"))


def vllm_models(max_len: int = 32768) -> dict:
    return {
        "object": "list",
        "data": [
            {
                "id": "Qwen/Qwen3-0.6B",
                "object": "model",
                "created": 0,
                "owned_by": "vllm",
                "root": "Qwen/Qwen3-0.6B",
                "parent": None,
                "max_model_len": max_len,
            }
        ],
    }


def vllm_chunk(token: str, logprob: float, top: list[tuple[str, float]]) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "Qwen/Qwen3-0.6B",
        "choices": [
            {
                "index": 0,
                "delta": {"content": token},
                "finish_reason": None,
                "logprobs": {
                    "content": [
                        {
                            "token": token,
                            "logprob": logprob,
                            "bytes": _bytes(token),
                            "top_logprobs": [
                                {"token": t, "logprob": lp, "bytes": _bytes(t)} for t, lp in top
                            ],
                        }
                    ]
                },
            }
        ],
    }


def finish_chunk(reason: str = "stop", **extra) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
        **extra,
    }


def llama_models() -> dict:
    return {
        "object": "list",
        "data": [
            {
                "id": "smollm2.gguf",
                "object": "model",
                "created": 0,
                "owned_by": "llamacpp",
                "meta": {"n_ctx_train": 8192, "n_params": 134515008, "size": 98000000},
            }
        ],
    }


def llama_chunk(tid: int, token: str, p, top: list[tuple[int, str, float]], post: bool) -> dict:
    key, tkey = ("prob", "top_probs") if post else ("logprob", "top_logprobs")
    return {
        "choices": [
            {
                "index": 0,
                "delta": {"content": token},
                "finish_reason": None,
                "logprobs": {
                    "content": [
                        {
                            "id": tid,
                            "token": token,
                            key: p,
                            "bytes": _bytes(token),
                            tkey: [
                                {"id": i, "token": t, key: v, "bytes": _bytes(t)} for i, t, v in top
                            ],
                        }
                    ]
                },
            }
        ],
        "object": "chat.completion.chunk",
        "model": "smollm2.gguf",
    }
