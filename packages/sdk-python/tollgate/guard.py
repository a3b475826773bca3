"""What the WSGI and ASGI middleware share: reading the key from a request and turning a verdict into an answer.

The answers are the Node middleware's (packages/sdk/src/guard.ts), code for code and word for word, so an API
guarded from Node or from Python refuses alike.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from .result import CheckResult

_BEARER = re.compile(r"^bearer\s+(\S+)\s*\Z", re.IGNORECASE)


def read_key(header: Callable[[str], Optional[str]]) -> Optional[str]:
    """The key from `X-API-Key`, else from `Authorization: Bearer <key>`; None when neither carries a non-empty key.
    `header(name)` gets a lower-case header name."""
    direct = (header("x-api-key") or "").strip()
    if direct != "":
        return direct
    match = _BEARER.match(header("authorization") or "")
    return match.group(1) if match is not None else None


class Refusal(NamedTuple):
    status: int
    code: str
    message: str
    #: Seconds, for the Retry-After header.
    retry_after: Optional[int]

    @property
    def status_line(self) -> str:
        return f"{self.status} {_PHRASES[self.status]}"

    def body(self) -> bytes:
        return json.dumps({"error": {"code": self.code, "message": self.message}}).encode("utf-8")

    def headers(self) -> List[Tuple[str, str]]:
        body_length = len(self.body())
        headers = [("Content-Type", "application/json; charset=utf-8"), ("Content-Length", str(body_length))]
        if self.retry_after is not None:
            headers.append(("Retry-After", str(self.retry_after)))
        return headers


_PHRASES: Dict[int, str] = {401: "Unauthorized", 429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


def _seconds(value: Optional[float], default: int) -> int:
    # Retry-After takes whole seconds; round up so a client never comes back too early.
    return default if value is None else max(1, int(-(-value // 1)))


def refusal_of(result: Optional[CheckResult]) -> Optional[Refusal]:
    """None to let the request through, else what to answer. `result` None: the request carried no key."""
    if result is None:
        return Refusal(401, "MISSING_KEY", "An API key is required (X-API-Key or Authorization: Bearer)", None)
    if result.valid:
        return None
    if result.reason == "LIMIT_EXCEEDED":
        return Refusal(429, "LIMIT_EXCEEDED", "The usage limit of this API key is reached", _seconds(result.retry_after, 60))
    if result.reason == "RATE_LIMITED":
        return Refusal(429, "RATE_LIMITED", "Too many requests", _seconds(result.retry_after, 1))
    if result.reason == "UNAVAILABLE":
        return Refusal(503, "UNAVAILABLE", "The API key could not be verified; try again", 1)
    if result.reason == "UNAUTHORIZED":
        # This server's own configuration (its verifier token), not the caller's key: a 500, and no "try again".
        return Refusal(500, "VERIFIER_UNAUTHORIZED", "This API cannot verify API keys: its verifier token was refused", None)
    return Refusal(401, "INVALID_KEY", "The API key is not valid", None)
