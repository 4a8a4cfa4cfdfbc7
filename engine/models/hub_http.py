"""HTTP to the hub with nothing left open-ended.

Every request has a connect timeout (CONNECT_S) and a read timeout (READ_S), and runs
under a deadline: one hub answer (a search, a listing, a file's headers) either
arrives whole within DEADLINE_S seconds (30 by default; tests lower it) or ends in a
HubError saying so, whether the hub never answers, drips a byte a second or pages
forever. Redirects are followed by hand, at most MAX_REDIRECTS, and a loop is named
in words; an answer's JSON is capped at MAX_JSON_BYTES and NaN reads as null. No
retries: an HTTP 500 is one line at once. The login token (huggingface_hub's) goes
only to the hub's own address. No MLX, no Qt.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from urllib.parse import urljoin, urlsplit

from engine.display.units import binary_size
from engine.models.hub_names import HubError, shown

DEADLINE_S = 30.0  # seconds one hub answer (headers, and a listing's body) may take
CONNECT_S = 5.0  # seconds to connect before saying the hub cannot be reached
READ_S = 15.0  # seconds of silence in the middle of an answer
MAX_REDIRECTS = 5
MAX_JSON_BYTES = 32 * 2**20


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _auth(url: str, hub: str) -> dict[str, str]:
    """The person's hub token, for the hub's own address only (never a redirect's)."""
    if _origin(url) != _origin(hub):
        return {}
    try:
        from huggingface_hub import get_token

        token = get_token()
    except Exception:  # noqa: BLE001 - no library or an unreadable token file: anonymous
        token = None
    return {"Authorization": f"Bearer {token}"} if token else {}


def _client():
    import httpx

    timeout = httpx.Timeout(min(READ_S, DEADLINE_S), connect=min(CONNECT_S, DEADLINE_S))
    return httpx.Client(timeout=timeout, follow_redirects=False)


def _send(
    client,
    method: str,
    url: str,
    hub: str,
    what: str,
    params=None,
    headers=None,
    *,
    same_host: bool = False,
):
    """Send, following redirects by hand; with `same_host` a redirect elsewhere (the
    hub's CDN) is returned unfollowed, as huggingface_hub's metadata call does."""
    seen = {url}
    for _ in range(MAX_REDIRECTS + 1):
        head = {"Accept-Encoding": "identity", **(headers or {}), **_auth(url, hub)}
        r = client.send(client.build_request(method, url, params=params, headers=head), stream=True)
        if not r.is_redirect:
            return r
        target = urljoin(str(r.url), r.headers.get("Location", ""))
        if same_host and _origin(target) != _origin(str(r.url)):
            return r
        r.close()
        if _origin(target)[0] not in ("http", "https"):
            raise HubError(f"{what}: the hub redirected to '{shown(target)}', not a web address")
        if target in seen:
            raise HubError(f"{what}: the hub redirected in a loop (back to {shown(target)})")
        seen.add(target)
        url, params = target, None
    raise HubError(f"{what}: the hub redirected more than {MAX_REDIRECTS} times")


def check_status(r, what: str) -> None:
    """A one-line HubError for an error answer (no retries, nothing read from it)."""
    status = r.status_code
    if status in (401, 403, 404):
        login = "" if status == 404 else " or it needs a login"
        raise HubError(f"{what}: not found on the hub ({status}){login}")
    if status >= 400 or status < 200:
        raise HubError(f"{what}: the hub answered HTTP {status}")


def _read_json(r, what: str, end: float):
    body = bytearray()
    for chunk in r.iter_bytes():
        body += chunk
        if len(body) > MAX_JSON_BYTES:
            raise HubError(f"{what}: the hub's answer is larger than {binary_size(MAX_JSON_BYTES)}")
        if time.monotonic() > end:
            raise TimeoutError
    try:
        return json.loads(bytes(body), parse_constant=lambda _: None)  # NaN, Infinity: null
    except (ValueError, RecursionError) as e:
        raise HubError(f"{what}: the hub's answer is not valid JSON") from e


def get_json(url: str, hub: str, what: str, params=None, end: float | None = None):
    """GET `url` and its JSON body, all within the deadline (`end`, a monotonic time).

    Returns:
        (the parsed JSON, the answer's `Link: next` URL or None).
    """
    end = time.monotonic() + DEADLINE_S if end is None else end

    def work():
        with _client() as client:
            r = _send(client, "GET", url, hub, what, params)
            try:
                check_status(r, what)
                nxt = r.links.get("next", {}).get("url")
                return _read_json(r, what, end), nxt
            finally:
                r.close()

    return within(work, what, end)


def head(url: str, hub: str, what: str):
    """HEAD `url` (a file), following only the hub's own redirects: (status, headers, url)."""

    def work():
        with _client() as client:
            r = _send(client, "HEAD", url, hub, what, same_host=True)
            r.close()
            check_status(r, what)
            return r.status_code, dict(r.headers), str(r.url)

    return within(work, what, time.monotonic() + DEADLINE_S)


@contextmanager
def stream(url: str, hub: str, what: str, headers: dict[str, str]):
    """GET `url` to read its body as it arrives; the headers within the deadline."""
    client = _client()
    try:
        r = within(
            lambda: _send(client, "GET", url, hub, what, headers=headers),
            what,
            time.monotonic() + DEADLINE_S,
        )
        try:
            check_status(r, what)
            yield r
        finally:
            r.close()
    finally:
        client.close()


def within(work: Callable, what: str, end: float):
    """Run `work` on a helper thread and wait until `end` at most; its result, or its
    error as a one-line HubError. A thread still blocked past the deadline is left to
    its read timeout (READ_S) and ends on its own."""
    box: dict = {}

    def run():
        try:
            box["ok"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = e

    worker = threading.Thread(target=run, daemon=True, name="hub-request")
    worker.start()
    worker.join(max(end - time.monotonic(), 0.0))
    if worker.is_alive() or isinstance(box.get("error"), TimeoutError):
        raise HubError(f"{what}: the hub did not answer within {DEADLINE_S:g} s")
    if "error" in box:
        raise translate(box["error"], what) from box["error"]
    return box["ok"]


def translate(e: BaseException, what: str, resume: bool = False) -> BaseException:
    """The one-line HubError an HTTP library failure stands for (HubErrors as they are)."""
    import httpx

    if isinstance(e, HubError) or not isinstance(e, Exception):
        return e
    if isinstance(e, httpx.ConnectError | httpx.ConnectTimeout):
        return HubError(f"{what}: the hub at {_hub_shown(e)} cannot be reached (offline?)")
    if isinstance(e, httpx.TimeoutException):
        return HubError(f"{what}: the hub stopped answering (nothing for {READ_S:g} s)")
    if isinstance(e, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return HubError(f"{what}: the hub address is not a web address ({shown(e)})")
    dropped = any(w in str(e).lower() for w in ("closed", "incomplete", "reset", "eof"))
    if isinstance(e, httpx.RemoteProtocolError) and not dropped:
        return HubError(f"{what}: the hub sent a malformed answer ({shown(e, 120)})")
    if isinstance(e, httpx.TransportError):
        again = "download again to resume" if resume else "try again"
        return HubError(f"{what}: the connection to the hub dropped ({type(e).__name__}); {again}")
    if isinstance(e, httpx.HTTPError | OSError | ValueError | UnicodeError):
        return HubError(f"{what}: {type(e).__name__}: {shown(e, 200)}")
    return e


def _hub_shown(e) -> str:
    """The address a failed request went to: scheme, host and port only (a user name
    or key written into HF_ENDPOINT is never shown)."""
    try:
        url = e.request.url
    except RuntimeError:  # no request attached
        return "its address"
    port = f":{url.port}" if url.port else ""
    return shown(f"{url.scheme}://{url.host}{port}")
