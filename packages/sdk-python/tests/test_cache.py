"""The cache's rules on their own (the LRU bound, trust while the stream is down, answers fetched across an event,
the countdown), and the events stream's: silence past the idle timeout is a drop, a reconnection sends Last-Event-ID,
`resync` and `key.changed` drop what they name."""

from __future__ import annotations

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler
from typing import List, Optional

from tests.support import LiveCase, Stub, answer, wait_until
from tollgate.cache import EXHAUSTED, HIT, MISS, KeyCache
from tollgate.result import CheckResult

VALID = CheckResult(True, "VALID", order_id=1, key_id=11, config={}, usage={"used": 1, "limit": 3, "remaining": 2})


def valid(key_id: int) -> CheckResult:
    return CheckResult(True, "VALID", order_id=key_id, key_id=key_id, config={}, usage=None)


class KeyCacheTest(unittest.TestCase):
    def test_least_recently_used_entries_go_first_past_the_bound(self) -> None:
        cache = KeyCache(ttl=10, negative_ttl=3, max_entries=2)
        cache.store("a", valid(1), 0, cache.epoch)
        cache.store("b", valid(2), 0, cache.epoch)
        self.assertEqual(cache.lookup("a", 1, True)[0], HIT)  # a is now the most recent
        cache.store("c", CheckResult(False, "NOT_FOUND"), 0, cache.epoch)
        self.assertEqual([cache.lookup(key, 1, True)[0] for key in "abc"], [HIT, MISS, HIT])
        self.assertEqual(len(cache), 2)

    def test_ttls_and_trust_while_the_stream_is_down(self) -> None:
        cache = KeyCache(ttl=10, negative_ttl=3, max_entries=10)
        cache.store("ok", valid(1), 100, cache.epoch)
        cache.store("no", CheckResult(False, "NOT_FOUND"), 100, cache.epoch)
        cache.store("slow", CheckResult(False, "RATE_LIMITED", key_id=3, retry_after=2), 100, cache.epoch)
        cache.store("down", CheckResult(False, "UNAVAILABLE"), 100, cache.epoch)  # never stored: it is about Tollgate
        self.assertEqual([cache.lookup(key, 101, True)[0] for key in ("ok", "no", "slow", "down")], [HIT, HIT, HIT, MISS])
        self.assertEqual([cache.lookup(key, 102.5, True)[0] for key in ("ok", "no", "slow")], [HIT, HIT, MISS])
        self.assertEqual([cache.lookup(key, 103.5, True)[0] for key in ("ok", "no")], [HIT, MISS])
        self.assertEqual(cache.lookup("ok", 101.5, False)[0], MISS, "older than a second, untrusted")

    def test_an_answer_fetched_across_an_event_is_not_stored_and_events_drop_what_they_name(self) -> None:
        cache = KeyCache(ttl=10, negative_ttl=3, max_entries=10)
        before = cache.epoch
        cache.bump()
        cache.store("a", valid(1), 0, before)
        self.assertEqual(cache.lookup("a", 1, True)[0], MISS)
        cache.store("a", valid(1), 0, cache.epoch)
        cache.store("a2", valid(1), 0, cache.epoch)  # two keys of one id (a rotation with grace)
        cache.store("b", valid(2), 0, cache.epoch)
        cache.drop_key_id(1)
        self.assertEqual([cache.lookup(key, 1, True)[0] for key in ("a", "a2", "b")], [MISS, MISS, HIT])
        cache.clear()
        self.assertEqual(cache.lookup("b", 1, True)[0], MISS)

    def test_the_countdown_stops_at_zero_until_the_server_answers_again(self) -> None:
        cache = KeyCache(ttl=10, negative_ttl=3, max_entries=10)
        cache.store("k", VALID, 0, cache.epoch)
        first = cache.lookup("k", 1, True)[1]
        self.assertEqual((first.usage["used"], first.usage["remaining"]), (2, 1))
        self.assertEqual(cache.lookup("k", 1, True)[1].usage["remaining"], 0)
        self.assertEqual([cache.lookup("k", 1, True)[0] for _ in range(2)], [EXHAUSTED, EXHAUSTED])
        self.assertEqual(first.usage["remaining"], 1, "a caller's copy does not move")
        self.assertEqual(VALID.usage["remaining"], 2, "nor does the server's answer")
        # Past a limit the plan does not enforce: nothing to count down.
        cache.store("over", CheckResult(True, "VALID", key_id=5, usage={"used": 9, "limit": 3, "remaining": 0}), 0, cache.epoch)
        self.assertEqual(cache.lookup("over", 1, True)[0], HIT)


class EventStreamTest(LiveCase):
    def test_silence_past_the_idle_timeout_is_a_drop_and_the_stream_comes_back(self) -> None:
        stub = Stub(lambda handler: answer(handler, 500, b"{}"))
        self.addCleanup(stub.close)
        client = self.client(stub.url, stream_idle_timeout=0.3)
        self.connected(client)
        self.assertTrue(wait_until(lambda: stub.streams >= 2, timeout=3), "reconnected after the silence")

    def test_reconnection_sends_last_event_id_and_events_drop_cached_keys(self) -> None:
        sent_ids: List[Optional[str]] = []
        feed: List[bytes] = []
        ready = threading.Event()

        def handle(handler: BaseHTTPRequestHandler) -> None:
            if handler.command == "POST":  # get_info: key 7 is valid
                body = {"result": {"valid": 1, "reason": "VALID", "config": {}, "usage": None, "order_id": 7, "key_id": 7}, "error": None}
                answer(handler, 200, json.dumps(body).encode())
                return
            sent_ids.append(handler.headers.get("Last-Event-ID"))
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(b": connected\n\n")
            handler.wfile.flush()
            ready.set()
            while not stub.closed.is_set():
                if feed:
                    chunk = feed.pop(0)
                    if chunk == b"HANG UP":
                        handler.close_connection = True
                        return
                    handler.wfile.write(chunk)
                    handler.wfile.flush()
                stub.closed.wait(0.01)

        stub = Stub(handle, stream=False)
        self.addCleanup(stub.close)
        client = self.client(stub.url)
        self.connected(client)
        self.assertTrue(client.check("KEY-7").valid)
        self.assertEqual(len(client._cache), 1)
        feed.append(b'id: 41\ndata: {"type": "key.changed", "order_id": 7, "key_id": 7}\n\n')
        self.assertTrue(wait_until(lambda: len(client._cache) == 0, timeout=2), "key.changed dropped the key")
        ready.clear()
        feed.append(b"HANG UP")
        self.assertTrue(wait_until(lambda: len(sent_ids) == 2 and client.connected, timeout=3))
        self.assertEqual(sent_ids, [None, "41"])
        self.assertTrue(client.check("KEY-7").valid)
        feed.append(b'id: 42\ndata: {"type": "resync"}\n\n')
        self.assertTrue(wait_until(lambda: len(client._cache) == 0, timeout=2), "resync cleared the cache")
