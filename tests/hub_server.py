"""A local stand-in for the Hugging Face hub's HTTP API, enough for huggingface_hub's
search, model info and file downloads: GET /api/models, GET
/api/models/<repo>/revision/<rev>, HEAD/GET /<repo>/resolve/<rev>/<file> with Range
requests. Modes make a file slow (so a test can cancel it) or drop the connection.

It also plays a hostile hub (`attack`, `search_body`, `info_body`, `file_headers`):
it can say nothing, drip a byte at a time, page forever, redirect in a loop or
without end, answer HTTP 500, send search answers of the wrong shape, list file
names that climb out of the cache, and send commit ids and ETags that are paths."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A client that gave up (what the hostile modes cause) is no news."""
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class FakeHub:
    """Repos {repo_id: {filename: bytes}} served on 127.0.0.1; `url` is HF_ENDPOINT.

    Attributes:
        slow: seconds to wait after each chunk of a file download.
        drop: True: every download sends half its bytes then closes (later ones
            close at once).
        ranges: the Range headers downloads asked for, in order.
        sent: body bytes sent for downloads.
    """

    def __init__(self, repos: dict[str, dict[str, bytes]], meta: dict[str, dict] | None = None):
        self.repos, self.meta = repos, meta or {}
        self.slow, self.drop = 0.0, False
        self.ranges: list[str | None] = []
        self.sent = 0
        self.bodies: list[int] = []  # bytes of each download sent in full
        self._body_sent = threading.Condition()
        # hostile modes: "silent", "drip", "drip_body", "pages", "loop", "redirects",
        # "500", "oversize" (a file body longer than announced)
        self.attack: str | None = None
        self.search_body: bytes | None = None  # served as is for /api/models
        self.info_body: bytes | None = None  # served as is for /api/models/<repo>
        self.file_headers: dict[str, str] = {}  # replace a file answer's headers
        self.requests: list[str] = []  # "METHOD path" of every request
        self.stopping = threading.Event()
        self.drip_s = 0.05  # seconds between dripped bytes
        self.server = _Server(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # close() waits one poll interval of serve_forever: 0.05 s, not the default 0.5
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def last_body(self, count: int, timeout_s: float = 10.0) -> int:
        """The size of the `count`-th download sent in full, once the server has noted it.

        The client may hold every byte before the server's thread appends to `bodies`.
        """
        with self._body_sent:
            self._body_sent.wait_for(lambda: len(self.bodies) >= count, timeout_s)
        assert len(self.bodies) >= count, f"{len(self.bodies)} downloads sent in full"
        return self.bodies[count - 1]

    def close(self) -> None:
        """Stop serving."""
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def search_rows(self, query: dict) -> list[dict]:
        """The /api/models answer for a query (search, filter)."""
        words = (query.get("search") or [""])[0].lower()
        tag = (query.get("filter") or [""])[0]
        rows = []
        for repo, files in self.repos.items():
            meta = {"tags": [], "downloads": 0, "likes": 0, **self.meta.get(repo, {})}
            if words in repo.lower() and (not tag or tag in meta["tags"]):
                size = sum(len(b) for b in files.values())
                rows.append({"id": repo, "modelId": repo, "usedStorage": size, **meta})
        return sorted(rows, key=lambda r: -r["downloads"])

    def tree(self, repo: str) -> list[dict]:
        """The /api/models/<repo>/tree/<rev> answer (one page)."""
        return [
            {"type": "file", "path": n, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
            for n, b in self.repos[repo].items()
        ]

    def info(self, repo: str) -> dict:
        """The /api/models/<repo>/revision/<rev> answer."""
        files = self.repos[repo]
        siblings = [{"rfilename": n, "size": len(b)} for n, b in files.items()]
        return {"id": repo, "modelId": repo, "sha": COMMIT, "siblings": siblings, "private": False}


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _json(self, data, status=200):
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _missing(self):
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("X-Error-Message", "Repository not found")
            self._body(b'{"error":"Repository not found"}')

        def _body(self, body: bytes):
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has no body
                self.wfile.write(body)

        def _file(self, head: bool):
            parts = unquote(urlparse(self.path).path).strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                return self._missing()
            repo, name = "/".join(parts[:2]), "/".join(parts[4:])
            data = hub.repos.get(repo, {}).get(name)
            if data is None:
                self.send_response(404)
                self.send_header(
                    "X-Error-Code", "EntryNotFound" if repo in hub.repos else "RepoNotFound"
                )
                return self._body(b"not found")
            start = 0
            rng = self.headers.get("Range")
            if not head:
                hub.ranges.append(rng)
            if rng and not head:
                start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206 if start else 200)
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
            for key, value in {**headers, **hub.file_headers}.items():
                self.send_header(key, value)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            # "oversize": the body is longer than the HEAD answer said
            extra = b"x" * 100_000 if hub.attack == "oversize" and not head else b""
            self.send_header("Content-Length", str(len(data) - start + len(extra)))
            self.end_headers()
            if head:
                return
            if hub.attack == "drip_body":
                return self._drip(data[start:])
            self._send(data[start:] + extra)

        def _send(self, body: bytes):
            if hub.drop:
                half = body[: len(body) // 2] if len(hub.ranges) == 1 else b""
                self.wfile.write(half)
                hub.sent += len(half)
                self.wfile.flush()
                self.close_connection = True
                return
            for i in range(0, len(body), 4096):
                self.wfile.write(body[i : i + 4096])
                self.wfile.flush()
                hub.sent += len(body[i : i + 4096])
                if hub.slow:
                    time.sleep(hub.slow)
            with hub._body_sent:
                hub.bodies.append(len(body))
                hub._body_sent.notify_all()

        def _drip(self, body: bytes):
            for i in range(len(body)):
                if hub.stopping.wait(hub.drip_s):
                    return
                try:
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up
                    return

        def _attacked(self) -> bool:
            """Answer as the hostile mode says; False: answer normally."""
            hub.requests.append(f"{self.command} {self.path}")
            path = urlparse(self.path).path
            if hub.attack == "silent":
                hub.stopping.wait(60)
            elif hub.attack == "drip":
                self._drip(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]")
            elif hub.attack == "500":
                self.send_response(500)
                self._body(b"Internal Server Error")
            elif hub.attack in ("loop", "redirects"):
                n = int(path[2:]) + 1 if path[2:].isdigit() else 0  # /r<n>
                self.send_response(302)
                self.send_header("Location", f"/r{n % 2 if hub.attack == 'loop' else n}")
                self._body(b"")
            elif hub.attack == "pages" and path == "/api/models":
                self.send_response(200)
                page = len(hub.requests)
                self.send_header("Link", f'<{hub.url}/api/models?page={page}>; rel="next"')
                self.send_header("Content-Type", "application/json")
                self._body(b"[]")
            elif path == "/api/models" and hub.search_body is not None:
                self.send_response(200)
                self._body(hub.search_body)
            elif path.startswith("/api/models/") and hub.info_body is not None:
                self.send_response(200)
                self._body(hub.info_body)
            else:
                return False
            return True

        def do_HEAD(self):  # noqa: N802 - http.server's names
            if not self._attacked():
                self._file(head=True)

        def do_GET(self):  # noqa: N802
            if self._attacked():
                return
            url = urlparse(self.path)
            path = unquote(url.path)
            if path == "/api/models":
                return self._json(hub.search_rows(parse_qs(url.query)))
            if path.startswith("/api/models/"):
                rest = path.removeprefix("/api/models/").split("/")
                repo = "/".join(rest[:2])
                if repo in hub.repos and rest[2:3] == ["tree"]:
                    return self._json(hub.tree(repo))
                return self._json(hub.info(repo)) if repo in hub.repos else self._missing()
            self._file(head=False)

    return Handler
