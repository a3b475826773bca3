"""ASGI middleware (FastAPI, Starlette, Django's ASGI app): requests without a valid key are answered here.

    app.add_middleware(TollgateASGI, tollgate=tollgate)   # FastAPI / Starlette
    application = TollgateASGI(get_asgi_application(), tollgate)

A request that passes carries the verdict in its scope: `scope["tollgate"]`, and `scope["state"]["tollgate"]`, which
Starlette shows as `request.state.tollgate`. A cached verdict is given on the event loop; a key that needs Tollgate is
checked in a worker thread, so a slow Tollgate never blocks other requests. WebSocket connections are guarded too:
refused ones are closed before acceptance with code 4000 + the HTTP status (4401, 4429, 4500, 4503).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Dict, Optional

from .client import Tollgate
from .guard import read_key, refusal_of
from .result import CheckResult

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class TollgateASGI:
    def __init__(self, app: ASGIApp, tollgate: Tollgate, ip: Optional[Callable[[Scope], Optional[str]]] = None) -> None:
        """`ip(scope)`: the end user's address (default the connection's client address)."""
        self.app = app
        self.tollgate = tollgate
        self.ip = ip if ip is not None else _client_address

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan and the like carry no key
            return
        headers = {}
        for name, value in scope.get("headers") or []:
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        key = read_key(headers.get)
        result = None if key is None else await self._check(key, self.ip(scope))
        refusal = refusal_of(result)
        if refusal is None:
            scope["tollgate"] = result
            scope.setdefault("state", {})["tollgate"] = result
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 4000 + refusal.status})
            return
        await send(
            {
                "type": "http.response.start",
                "status": refusal.status,
                "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in refusal.headers()],
            }
        )
        await send({"type": "http.response.body", "body": refusal.body()})

    async def _check(self, key: str, ip: Optional[str]) -> CheckResult:
        cached = self.tollgate.check_cached(key)
        if cached is not None:
            return cached
        return await asyncio.get_running_loop().run_in_executor(None, self.tollgate.check, key, ip)


def _client_address(scope: Scope) -> Optional[str]:
    client = scope.get("client")
    return client[0] if client else None
