"""check and get_info against the real Tollgate: the reasons, the cache, one request for concurrent checks, the local
quota countdown, and the per-key rate limit with its retry_after."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.support import KEYS, UNKNOWN_KEY, LiveCase, count_calls, usage_total


class CheckTest(LiveCase):
    def test_a_valid_key_with_its_order_key_id_config_and_usage(self) -> None:
        client = self.client()
        result = client.check(KEYS["valid"]["key"], ip="203.0.113.9")
        self.assertTrue(result.valid)
        self.assertTrue(result)  # a result is truthy exactly when valid
        self.assertEqual(result.reason, "VALID")
        self.assertEqual(result.order_id, KEYS["valid"]["order_id"])
        self.assertIsInstance(result.key_id, int)
        self.assertEqual(result.config, {"tier": "pro", "monthlyLimit": 100})
        self.assertEqual((result.usage["used"], result.usage["limit"], result.usage["remaining"]), (1, 100, 99))
        self.assertIsNone(result.retry_after)
        # get_info: the same verdict with the server's field names, from the cache (counted as one more use).
        info = client.get_info(KEYS["valid"]["key"])
        self.assertEqual({k: info[k] for k in ("valid", "reason", "order_id", "config")}, {"valid": True, "reason": "VALID", "order_id": KEYS["valid"]["order_id"], "config": {"tier": "pro", "monthlyLimit": 100}})
        self.assertEqual(info["usage"]["used"], 2)
        # An address Tollgate would refuse (a zone id) is left out, not turned into a failure.
        self.assertEqual(self.client().check(KEYS["valid"]["key"], ip="fe80::1%eth0").reason, "VALID")

    def test_unknown_and_disabled_keys_are_refused_with_their_reason(self) -> None:
        client = self.client()
        unknown = client.check(UNKNOWN_KEY)
        self.assertEqual((unknown.valid, unknown.reason, unknown.key_id, unknown.config), (False, "NOT_FOUND", None, None))
        disabled = client.check(KEYS["disabled"]["key"])
        self.assertFalse(disabled.valid)
        self.assertEqual(disabled.reason, "DISABLED")
        self.assertIsNone(disabled.config)

    def test_keys_outside_the_alphabet_empty_or_too_long_are_not_found_and_never_valid(self) -> None:
        client = self.client()
        calls = count_calls(client)
        for key in ("", "x" * 257, None, 42):
            self.assertEqual(client.check(key).reason, "NOT_FOUND")  # type: ignore[arg-type]
        self.assertEqual(calls, {}, "answered without asking")
        # Outside the hexadecimal alphabet: Tollgate is asked (imported keys may use other alphabets) and says no.
        for key in ("ZZZZZZZZ-ZZZZZZZZ", "ключ-ключ-ключ", "AAAA\nBBBB\rCCCC", "A\x00B\x00C\x00D\x00", '"; DROP TABLE--', "\ud800\udfff" * 4, "🔑" * 20):
            result = client.check(key)
            self.assertEqual((result.valid, result.reason), (False, "NOT_FOUND"), repr(key))
        self.assertEqual(client.get_info("%%%%%%%%")["reason"], "NOT_FOUND")
        # Tollgate refuses a NUL as input (422): not an outage, so fail_open does not let it in.
        self.assertEqual(self.client(fail_open=True).check("A\x00B\x00C\x00D\x00").as_dict()["valid"], False)

    def test_concurrent_checks_of_one_uncached_key_make_one_request_and_every_answer_is_one_use(self) -> None:
        client = self.client(report_interval=60)
        self.connected(client)  # a stream connecting mid-request would (rightly) keep that answer out of the cache
        calls = count_calls(client)
        key = KEYS["coalesced"]["key"]
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda _: client.check(key), range(100)))
        self.assertTrue(all(result.valid for result in results))
        self.assertEqual(calls.get("admin/serviceapikey/get_info"), 1)
        for _ in range(50):
            client.check(key)
        self.assertEqual(calls.get("admin/serviceapikey/get_info"), 1)
        # Refusals are remembered too (negative cache).
        with ThreadPoolExecutor(10) as pool:
            list(pool.map(lambda _: client.check("AAAAAAAA-AAAAAAAA-AAAAAAAA-AAAAAAAA"), range(20)))
        self.assertEqual(calls.get("admin/serviceapikey/get_info"), 2)
        # 150 answers: one counted by the server, 149 that shared its request or came from the cache.
        client.close()
        self.assertEqual(usage_total("coalesced"), 150)

    def test_the_quota_is_counted_down_locally_so_a_hard_limit_holds(self) -> None:
        client = self.client(report_interval=60)
        results = [client.check(KEYS["countdown"]["key"]) for _ in range(15)]
        self.assertEqual(sum(result.valid for result in results), 7)
        last = results[-1]
        self.assertEqual(last.reason, "LIMIT_EXCEEDED")
        self.assertGreaterEqual(last.retry_after, 1)  # until the usage period ends
        client.close()
        self.assertEqual(usage_total("countdown"), 7)

    def test_past_a_limit_the_plan_does_not_enforce_it_keeps_answering_without_asking_each_time(self) -> None:
        client = self.client(report_interval=60)
        self.connected(client)
        calls = count_calls(client)
        self.assertTrue(all(client.check(KEYS["unenforced"]["key"]).valid for _ in range(10)))
        self.assertLessEqual(calls["admin/serviceapikey/get_info"], 3)
        client.close()
        self.assertEqual(usage_total("unenforced"), 10)

    def test_threads_sharing_one_request_count_the_quota_down_too(self) -> None:
        client = self.client(report_interval=60)
        self.connected(client)
        with ThreadPoolExecutor(50) as pool:
            results = list(pool.map(lambda _: client.check(KEYS["shared_quota"]["key"]), range(50)))
        self.assertEqual(sum(result.valid for result in results), 30)
        client.close()
        self.assertEqual(usage_total("shared_quota"), 30)

    def test_a_rate_limited_key_gives_its_retry_after_which_is_honoured_then_validates_again(self) -> None:
        # Valid answers not cached, so every check asks the server, whose per-key rate limit decides.
        client = self.client(cache_ttl=0)
        self.connected(client)  # an answer fetched while the stream connects is (rightly) not cached
        calls = count_calls(client)
        key = KEYS["rate_limited"]["key"]
        self.assertEqual(client.check(key).reason, "VALID")
        limited = client.check(key)
        self.assertEqual((limited.valid, limited.reason), (False, "RATE_LIMITED"))
        self.assertGreaterEqual(limited.retry_after, 1)
        asked = calls["admin/serviceapikey/get_info"]
        # Until retry_after has passed the answer stands without asking Tollgate again.
        self.assertEqual(client.check(key).reason, "RATE_LIMITED")
        self.assertEqual(calls["admin/serviceapikey/get_info"], asked)
        time.sleep(limited.retry_after + 0.1)
        self.assertEqual(client.check(key).reason, "VALID")
        self.assertEqual(calls["admin/serviceapikey/get_info"], asked + 1)
