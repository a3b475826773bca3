"""The WSGI and ASGI middleware called directly, each around a minimal app, with the real Tollgate behind them: the
answers are the Node middleware's (401 MISSING_KEY / INVALID_KEY, 429 with Retry-After, 503, 500), and a request that
passes reaches the app with the verdict attached."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Dict, List, Optional, Tuple

from tests.support import KEYS, UNKNOWN_KEY, LiveCase, Stub, answer
from tollgate import Tollgate, TollgateASGI, TollgateWSGI

Headers = Dict[str, str]
NO_KEY: List[Headers] = [{}, {"X-API-Key": ""}, {"X-API-Key": "   "}, {"Authorization": "Bearer "}, {"Authorization": "Basic abc"}]


def wsgi_call(tollgate: Tollgate, headers: Headers) -> Tuple[int, Dict[str, str], Any]:
    def app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"tier": environ["tollgate"].config.get("tier")}).encode()]

    environ: Dict[str, Any] = {"REQUEST_METHOD": "GET", "PATH_INFO": "/data", "REMOTE_ADDR": "203.0.113.7"}
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    started: List[Any] = []
    body = b"".join(TollgateWSGI(app, tollgate)(environ, lambda status, response_headers: started.append((status, response_headers))))
    status, response_headers = started[0]
    return int(status.split()[0]), dict(response_headers), json.loads(body)


def asgi_call(tollgate: Tollgate, headers: Headers) -> Tuple[int, Dict[str, str], Any]:
    async def app(scope: Dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["state"]["tollgate"] is scope["tollgate"]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"tier": scope["tollgate"].config.get("tier")}).encode()})

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/data",
        "client": ("203.0.113.7", 50000),
        # Header bytes as a client sent them (UTF-8 here); ASGI servers hand them over undecoded.
        "headers": [(name.lower().encode("latin-1"), value.encode("utf-8")) for name, value in headers.items()],
    }
    sent: List[Dict[str, Any]] = []

    async def receive() -> Dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(TollgateASGI(app, tollgate)(scope, receive, send))
    response_headers = {name.decode(): value.decode() for name, value in sent[0]["headers"]}
    return sent[0]["status"], response_headers, json.loads(b"".join(message.get("body", b"") for message in sent[1:]))


CALLS = {"wsgi": wsgi_call, "asgi": asgi_call}


class MiddlewareTest(LiveCase):
    def each(self) -> Any:
        for name, call in CALLS.items():
            with self.subTest(name):
                yield name, call

    def test_a_valid_key_passes_by_x_api_key_or_bearer_with_the_verdict_attached(self) -> None:
        tollgate = self.client()
        for _, call in self.each():
            for headers in ({"X-API-Key": KEYS["middleware"]["key"]}, {"Authorization": f"Bearer {KEYS['middleware']['key']}"}):
                status, _, body = call(tollgate, headers)
                self.assertEqual((status, body), (200, {"tier": "gold"}))

    def test_401_for_a_missing_empty_malformed_unknown_or_disabled_key(self) -> None:
        tollgate = self.client()
        for _, call in self.each():
            for headers in NO_KEY:
                status, response_headers, body = call(tollgate, headers)
                self.assertEqual((status, body["error"]["code"]), (401, "MISSING_KEY"), headers)
                self.assertEqual(response_headers.get("Content-Type", response_headers.get("content-type")), "application/json; charset=utf-8")
            for key in (UNKNOWN_KEY, KEYS["disabled"]["key"], "not a key ✗"):
                status, _, body = call(tollgate, {"X-API-Key": key})
                self.assertEqual(body, {"error": {"code": "INVALID_KEY", "message": "The API key is not valid"}})
                self.assertEqual(status, 401)

    def test_429_limit_exceeded_with_retry_after_once_the_quota_is_used(self) -> None:
        tollgate = self.client()
        key = KEYS["middleware_limited"]["key"]  # one use in all, shared by both calls
        for name, call in self.each():
            status, headers, body = call(tollgate, {"X-API-Key": key})
            if name == "wsgi":
                self.assertEqual(status, 200)
                continue
            retry_after = headers.get("retry-after", headers.get("Retry-After"))
            self.assertEqual((status, body["error"]["code"]), (429, "LIMIT_EXCEEDED"))
            self.assertGreater(int(retry_after or 0), 0)

    def test_503_with_retry_after_when_tollgate_fails_and_500_when_it_refuses_the_token(self) -> None:
        outage = Stub(lambda handler: answer(handler, 502, b"<html>bad gateway</html>", "text/html"))
        self.addCleanup(outage.close)
        refusing = Stub(lambda handler: answer(handler, 401, b'{"result":null,"error":{"message":"no","code":205}}'), stream=False)
        self.addCleanup(refusing.close)
        for _, call in self.each():
            status, headers, body = call(self.client(outage.url), {"X-API-Key": UNKNOWN_KEY})
            self.assertEqual((status, body["error"]["code"]), (503, "UNAVAILABLE"))
            self.assertEqual(headers.get("Retry-After", headers.get("retry-after")), "1")
            status, headers, body = call(self.client(refusing.url, "wrong"), {"X-API-Key": UNKNOWN_KEY})
            self.assertEqual((status, body["error"]["code"]), (500, "VERIFIER_UNAUTHORIZED"))
            self.assertNotIn("Retry-After", headers)
            self.assertNotIn("retry-after", headers)

    def test_asgi_lets_lifespan_through_and_closes_a_refused_websocket_before_accepting_it(self) -> None:
        tollgate = self.client()
        reached: List[str] = []

        async def app(scope: Dict[str, Any], receive: Any, send: Any) -> None:
            reached.append(scope["type"])

        sent: List[Dict[str, Any]] = []

        async def receive() -> Dict[str, Any]:
            return {"type": "websocket.connect"}

        async def send(message: Dict[str, Any]) -> None:
            sent.append(message)

        middleware = TollgateASGI(app, tollgate)
        asyncio.run(middleware({"type": "lifespan"}, receive, send))
        asyncio.run(middleware({"type": "websocket", "headers": [], "client": None}, receive, send))
        self.assertEqual(reached, ["lifespan"])
        self.assertEqual(sent, [{"type": "websocket.close", "code": 4401}])
        asyncio.run(middleware({"type": "websocket", "headers": [(b"x-api-key", KEYS["middleware"]["key"].encode())], "client": None}, receive, send))
        self.assertEqual(reached, ["lifespan", "websocket"])

    def test_asgi_answers_cached_keys_on_the_loop_and_asks_tollgate_in_a_thread(self) -> None:
        tollgate = self.client()
        self.connected(tollgate)  # an answer fetched while the stream connects is (rightly) not cached
        key = KEYS["middleware"]["key"]
        seen: List[Optional[str]] = []
        real_check = tollgate.check

        def check(key: str, ip: Optional[str] = None) -> Any:
            seen.append(threading.current_thread().name)
            return real_check(key, ip)

        tollgate.check = check  # type: ignore[method-assign]
        asgi_call(tollgate, {"X-API-Key": key})
        asgi_call(tollgate, {"X-API-Key": key})
        self.assertEqual(len(seen), 1, "the second request came from the cache")
        self.assertNotEqual(seen[0], "MainThread")
