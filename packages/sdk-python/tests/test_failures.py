"""When Tollgate cannot answer properly: down, slow past the timeout, 5xx, garbage (UNAVAILABLE, fail_open decides,
nothing cached), and a verifier token it refuses (UNAUTHORIZED whatever fail_open says, logged once)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.support import BASE_URL, KEYS, LiveCase, Recorder, Stub, answer, wait_until
from tollgate import Tollgate, TollgateHttpError, refusal_of

KEY = "ABCDEF01-ABCDEF01-ABCDEF01-ABCDEF01"
WRONG_TOKEN = "wrong-token-0123456789"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class OutageTest(LiveCase):
    def assert_unavailable(self, base_url: str, timeout: float = 2.0) -> None:
        for fail_open in (False, True):
            client = self.client(base_url, timeout=timeout, fail_open=fail_open)
            started = time.monotonic()
            result = client.check(KEY)
            self.assertEqual((result.valid, result.reason), (fail_open, "UNAVAILABLE"), f"fail_open={fail_open}")
            self.assertLess(time.monotonic() - started, timeout + 0.5)
            self.assertIn("verify", client._on_error.whats())  # type: ignore[attr-defined]

    def test_tollgate_down(self) -> None:
        self.assert_unavailable(closed_port_url())

    def test_a_5xx_answer_not_cached(self) -> None:
        stub = Stub(lambda handler: answer(handler, 500, b'{"result":null,"error":{"message":"boom","code":500}}'))
        self.addCleanup(stub.close)
        self.assert_unavailable(stub.url)
        client = self.client(stub.url)
        client.check(KEY)
        before = stub.requests
        client.check(KEY)
        self.assertEqual(stub.requests, before + 1, "failures are not cached: the next check asks again")

    def test_a_slow_tollgate_is_given_up_on_at_the_timeout(self) -> None:
        def slow(handler: BaseHTTPRequestHandler) -> None:
            time.sleep(1.5)
            answer(handler, 200, b'{"result":{"valid":1,"reason":"VALID"},"error":null}')

        stub = Stub(slow)
        self.addCleanup(stub.close)
        self.assert_unavailable(stub.url, timeout=0.2)

    def test_a_tollgate_trickling_its_answer_is_given_up_on_at_the_timeout_too(self) -> None:
        def trickle(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Length", "200")
            handler.end_headers()
            for _ in range(20):
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.05)

        stub = Stub(trickle)
        self.addCleanup(stub.close)
        self.assert_unavailable(stub.url, timeout=0.3)

    def test_garbage_answers(self) -> None:
        garbage = [
            b"<html>502 Bad Gateway</html>",
            b'{"result": "yes"}',
            b'{"result": {"valid": 1, "reason": "MAYBE"}, "error": null}',
            b'{"result": {"valid": "1", "reason": "VALID"}, "error": null}',
            b'{"result": {"valid": 1, "reason": "VALID", "usage": "lots"}, "error": null}',
            b"[1, 2, 3]",
            b"\xff\xfe\x00garbage",
            b"",
        ]
        for body in garbage:
            stub = Stub(lambda handler, body=body: answer(handler, 200, body))
            try:
                self.assert_unavailable(stub.url)
            finally:
                stub.close()


    def test_something_that_does_not_speak_http_or_answers_without_end(self) -> None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        self.addCleanup(listener.close)

        def serve() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
                conn.close()

        threading.Thread(target=serve, daemon=True).start()
        self.assert_unavailable(f"http://127.0.0.1:{listener.getsockname()[1]}")

        def endless(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            handler.send_header("Content-Length", str(100 * 1024 * 1024))
            handler.end_headers()
            chunk = b" " * 65536
            for _ in range(1600):
                handler.wfile.write(chunk)

        stub = Stub(endless)
        self.addCleanup(stub.close)
        self.assert_unavailable(stub.url, timeout=5)

    def test_the_client_refuses_what_is_not_a_tollgate_url_or_token(self) -> None:
        for url in ("ftp://billing.example.com", "billing.example.com", ""):
            with self.assertRaises(ValueError, msg=url):
                Tollgate(url, "token")
        with self.assertRaises(ValueError):
            Tollgate(BASE_URL, "")


class RefusedTokenTest(LiveCase):
    def refusing_stub(self, status: int) -> Stub:
        message = "Authentication failed: unknown admin API token or inactive staff member" if status == 401 else 'You do not have the permission "serviceapikey.check"'
        body = json.dumps({"result": None, "error": {"message": message, "code": 205 if status == 401 else 403}}).encode()
        stub = Stub(lambda handler: answer(handler, status, body), stream=False)
        self.addCleanup(stub.close)
        return stub

    def test_unauthorized_never_valid_whatever_fail_open_says_and_not_cached(self) -> None:
        for status in (401, 403):
            stub = self.refusing_stub(status)
            for fail_open in (False, True):
                client = self.client(stub.url, WRONG_TOKEN, fail_open=fail_open)
                before = stub.requests
                result = client.check(KEY)
                self.assertEqual((result.valid, result.reason, result.key_id, result.config), (False, "UNAUTHORIZED", None, None))
                self.assertEqual(client.check(KEY).reason, "UNAUTHORIZED")
                self.assertEqual(stub.requests - before, 2, "asked again: a fixed token works at once")
        refusal = refusal_of(result)
        self.assertEqual((refusal.status, refusal.code, refusal.retry_after), (500, "VERIFIER_UNAUTHORIZED", None))

    def test_the_real_tollgate_refusing_a_wrong_token(self) -> None:
        recorder = Recorder()
        client = self.client(BASE_URL, WRONG_TOKEN, on_error=recorder)
        self.assertEqual(client.check(KEYS["valid"]["key"]).reason, "UNAUTHORIZED")
        refused = [error for what, error in recorder.seen if what == "verifier token refused"]
        self.assertIsInstance(refused[0], TollgateHttpError)
        self.assertEqual(refused[0].status, 401)
        self.assertNotIn(WRONG_TOKEN, " ".join(str(error) for _, error in recorder.seen))

    def test_logged_once_by_the_default_on_error_with_what_to_do_never_the_token(self) -> None:
        stub = self.refusing_stub(401)
        with self.assertLogs("tollgate", level="ERROR") as logs:
            client = self.client(stub.url, WRONG_TOKEN, on_error=None)
            for index in range(5):
                client.check(f"KEY-{index}")
            # The events stream is refused too (and retried): still the one line.
            self.assertTrue(wait_until(lambda: stub.streams >= 3, timeout=3))
        lines = [record.getMessage() for record in logs.records]
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("HTTP 401", lines[0])
        self.assertIn("Developers → Verifier tokens", lines[0])
        self.assertNotIn(WRONG_TOKEN, "\n".join(lines))
