"""One JSON POST to Tollgate's admin API, with a deadline for the whole exchange.

http.client rather than urllib: urllib's timeout applies to each socket operation, so a server trickling bytes could
hold a caller far longer than `timeout`; here every read gets only what is left of the deadline (as the Node SDK's
AbortSignal.timeout does for the whole request).
"""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.parse
from typing import Any, Dict, Optional, Tuple


#: The largest answer read (an ingest answer rejecting 1,000 events is about 200 kB): whatever answers in Tollgate's
#: place cannot make the app hold an unbounded body in memory.
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class TollgateHttpError(Exception):
    """Tollgate answered HTTP `status` (not 200); `detail` is the envelope's error message (never a key or the token)."""

    def __init__(self, status: int, retry_after: Optional[float], detail: str) -> None:
        super().__init__(f"Tollgate answered HTTP {status}" + (f": {detail}" if detail else ""))
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


class ProtocolError(Exception):
    """Tollgate (or whatever answered in its place) sent something that is not the API's envelope."""


def basic_authorization(token: str) -> str:
    """Verifier tokens are staff API tokens: HTTP Basic with the user name `admin` (CONTRACT §3)."""
    return "Basic " + base64.b64encode(f"admin:{token}".encode()).decode("ascii")


def split_base_url(base_url: str) -> Tuple[str, str, int, str]:
    """(scheme, host, port, path prefix) of an http(s) base URL; ValueError for anything else."""
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError("base_url must be an http(s) URL")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return parsed.scheme, parsed.hostname, port, parsed.path.rstrip("/")


def connect(base: Tuple[str, str, int, str], timeout: float) -> http.client.HTTPConnection:
    scheme, host, port, _ = base
    if scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def post_json(base: Tuple[str, str, int, str], path: str, authorization: str, payload: Dict[str, Any], timeout: float) -> Any:
    """POSTs `payload` to `<base>/api/<path>` and returns the envelope's `result`.

    Raises TollgateHttpError for any status but 200, ProtocolError for a 200 that is not the envelope, and OSError
    (socket.timeout included) when the server cannot be reached or is slower than `timeout` seconds in all.
    """
    deadline = time.monotonic() + timeout
    body = json.dumps(payload).encode("utf-8")
    conn = connect(base, timeout)
    try:
        conn.request(
            "POST",
            f"{base[3]}/api/{path}",
            body=body,
            headers={"Authorization": authorization, "Content-Type": "application/json", "Accept": "application/json"},
        )
        _set_remaining(conn, deadline)
        response = conn.getresponse()
        chunks = []
        size = 0
        while True:
            _set_remaining(conn, deadline)
            chunk = response.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise ProtocolError("Tollgate's answer is larger than any it gives")
            chunks.append(chunk)
        text = b"".join(chunks)
    finally:
        conn.close()
    if response.status != 200:
        detail = ""
        try:
            message = json.loads(text).get("error", {}).get("message")
            if isinstance(message, str):
                detail = message
        except (ValueError, AttributeError):
            pass  # not the envelope (a proxy's error page): no detail
        raise TollgateHttpError(response.status, _retry_after(response.getheader("Retry-After")), detail)
    try:
        envelope = json.loads(text)
    except ValueError as error:
        raise ProtocolError("Tollgate's answer is not JSON") from error
    if not isinstance(envelope, dict) or "result" not in envelope:
        raise ProtocolError("Tollgate's answer is not the API envelope")
    return envelope["result"]


def _set_remaining(conn: http.client.HTTPConnection, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("Tollgate did not answer in time")
    if conn.sock is not None:
        conn.sock.settimeout(remaining)
