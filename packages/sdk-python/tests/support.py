"""What the tests share: the stage test/processes/sdk-python.test.ts set (a real Tollgate, its tokens, keys made for
each test), calls to its admin API, its control endpoint (stop and restart it), and stub servers that misbehave."""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional

from tollgate import Tollgate


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run these tests through test/processes/sdk-python.test.ts")
    return value


BASE_URL = _env("TOLLGATE_URL")
VERIFIER_TOKEN = _env("TOLLGATE_VERIFIER_TOKEN")
ADMIN_TOKEN = _env("TOLLGATE_ADMIN_TOKEN")
DATABASE = _env("TOLLGATE_DB")
CONTROL_URL = _env("TOLLGATE_CONTROL_URL")
#: name → {"key", "order_id"}, one key per purpose (test/processes/sdk-python.test.ts lists them).
KEYS: Dict[str, Dict[str, Any]] = json.loads(_env("TOLLGATE_KEYS"))

UNKNOWN_KEY = "FFFFFFFF-FFFFFFFF-FFFFFFFF-FFFFFFFF"


def admin(path: str, params: Optional[Dict[str, Any]] = None) -> Any:
    """An admin API call with the administrator's token; the envelope's result (raises on an error envelope)."""
    request = urllib.request.Request(
        f"{BASE_URL}/api/admin/{path}",
        data=json.dumps(params or {}).encode(),
        headers={
            "Authorization": "Basic " + base64.b64encode(f"admin:{ADMIN_TOKEN}".encode()).decode(),
            "Content-Type": "application/json",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        envelope = json.loads(response.read())
    if envelope.get("error"):
        raise AssertionError(f"admin/{path}: {envelope['error']}")
    return envelope["result"]


def set_valid(name: str, valid: bool) -> None:
    admin("serviceapikey/update", {"order_id": KEYS[name]["order_id"], "valid": valid})


def usage_total(name: str) -> int:
    return admin("serviceapikey/usage", {"order_id": KEYS[name]["order_id"]})["total"]


def stored_events(name: str) -> List[Any]:
    """(event_id, meter, value) of every metered event stored for the key's order, read from the server's database."""
    connection = sqlite3.connect(f"file:{DATABASE}?mode=ro", uri=True, timeout=5)
    try:
        return connection.execute(
            "SELECT event_id, meter, value FROM usage_events WHERE order_id = ? ORDER BY event_id", (KEYS[name]["order_id"],)
        ).fetchall()
    finally:
        connection.close()


def control(action: str) -> None:
    """kill (SIGKILL, same port and data kept) or restart the Tollgate process."""
    request = urllib.request.Request(f"{CONTROL_URL}/{action}", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Recorder:
    """An on_error that keeps what it is given."""

    def __init__(self) -> None:
        self.seen: List[Any] = []
        self._lock = threading.Lock()

    def __call__(self, error: BaseException, what: str) -> None:
        with self._lock:
            self.seen.append((what, error))

    def whats(self) -> List[str]:
        with self._lock:
            return [what for what, _ in self.seen]


class LiveCase(unittest.TestCase):
    """A test case whose clients are closed after each test (and their threads with them)."""

    def setUp(self) -> None:
        self._clients: List[Tollgate] = []
        # The default on_error logs: keep the test output to the tests' own lines.
        logging.getLogger("tollgate").setLevel(logging.CRITICAL)

    def tearDown(self) -> None:
        for client in self._clients:
            client.close()
        logging.getLogger("tollgate").setLevel(logging.NOTSET)

    def client(self, base_url: str = BASE_URL, token: str = VERIFIER_TOKEN, **options: Any) -> Tollgate:
        options.setdefault("on_error", Recorder())
        client = Tollgate(base_url, token, **options)
        self._clients.append(client)
        return client

    def connected(self, client: Tollgate) -> None:
        self.assertTrue(wait_until(lambda: client.connected), "the events stream did not connect")


def count_calls(client: Tollgate) -> Dict[str, int]:
    """Counts the client's requests per path (wraps its one way out, `_send`)."""
    calls: Dict[str, int] = {}
    real = client._send
    lock = threading.Lock()

    def send(path: str, payload: Dict[str, Any]) -> Any:
        with lock:
            calls[path] = calls.get(path, 0) + 1
        return real(path, payload)

    client._send = send  # type: ignore[method-assign]
    client._reporter._send = send
    client._tracker._send = send
    return calls


class Stub:
    """An HTTP server on a free port answering POSTs with `handle(handler)`; the events stream stays open and silent."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None], stream: bool = True, keep_body: bool = False) -> None:
        """`stream` False: the events stream's GET is answered by `handle` too. `keep_body`: a POST's body is kept
        as `handler.body` for `handle` to read."""

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                stub.streams += 1
                if not stream:
                    handle(self)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b": connected\n\n")
                self.wfile.flush()
                stub.closed.wait(10)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if keep_body:
                    self.body = body
                stub.requests += 1
                handle(self)

            def log_message(self, *_: Any) -> None:
                pass

        stub = self
        self.requests = 0
        self.streams = 0
        self.closed = threading.Event()
        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the client hanging up on a slow answer is the point of some tests

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()


def answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
