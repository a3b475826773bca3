"""Revocation pushed over the events stream: a key disabled through the admin API is refused within one second, and
a Tollgate stopped and started again gives UNAVAILABLE (fail_open decides) and then valid answers and revocations."""

from __future__ import annotations

import time

from tests.support import KEYS, LiveCase, control, set_valid, wait_until
from tollgate import Tollgate


def seconds_until_refused(client: Tollgate, key: str, since: float, limit: float = 3.0) -> float:
    while time.monotonic() - since < limit:
        if not client.check(key).valid:
            return time.monotonic() - since
        time.sleep(0.01)
    return float("inf")


class RevocationTest(LiveCase):
    def test_a_revoked_key_is_refused_within_one_second_and_valid_again_once_re_enabled(self) -> None:
        client = self.client(cache_ttl=60)
        self.connected(client)
        key = KEYS["revoked"]["key"]
        for _ in range(3):
            self.assertTrue(client.check(key).valid)
            since = time.monotonic()
            set_valid("revoked", False)
            self.assertLess(seconds_until_refused(client, key, since), 1.0)
            self.assertEqual(client.check(key).reason, "DISABLED")
            # Re-enabled: valid again, the refusal was not kept past the change.
            set_valid("revoked", True)
            self.assertTrue(wait_until(lambda: client.check(key).valid, timeout=1.0, interval=0.01))


class RestartTest(LiveCase):
    def test_tollgate_stopped_gives_unavailable_then_valid_again_after_restart_with_revocation_still_pushed(self) -> None:
        key = KEYS["restarted"]["key"]
        closed = self.client(cache_ttl=60, timeout=0.3)
        open_ = self.client(cache_ttl=60, timeout=0.3, fail_open=True)
        self.connected(closed)
        self.connected(open_)
        self.assertTrue(closed.check(key).valid)
        self.assertTrue(open_.check(key).valid)

        control("kill")
        try:
            self.assertTrue(wait_until(lambda: not closed.connected, timeout=3), "the stream did not notice")
            # Cached answers are trusted at most a second without the stream; then the (down) server is asked.
            time.sleep(1.1)
            down = closed.check(key)
            self.assertEqual((down.valid, down.reason), (False, "UNAVAILABLE"))
            self.assertEqual((open_.check(key).valid, open_.check(key).reason), (True, "UNAVAILABLE"))
        finally:
            control("restart")
        self.connected(closed)
        self.assertTrue(wait_until(lambda: closed.check(key).valid, timeout=3))
        self.assertEqual(closed.check(key).reason, "VALID")
        since = time.monotonic()
        set_valid("restarted", False)
        self.assertLess(seconds_until_refused(closed, key, since), 1.0)
        self.assertLess(seconds_until_refused(open_, key, since), 1.0)
