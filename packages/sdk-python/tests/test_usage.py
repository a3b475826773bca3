"""Usage counted exactly once: uses answered from the cache (report_usage) and metered events (track), also when an
answer is lost and the batch is sent again — with the same ids, so Tollgate counts it once."""

from __future__ import annotations

import threading
from typing import Any, Dict, List

from tests.support import KEYS, LiveCase, Recorder, stored_events, usage_total
from tollgate import EventRejected, Tollgate


def lose_first_answer(client: Tollgate, path: str) -> List[Dict[str, Any]]:
    """The first call to `path` reaches Tollgate but its answer is lost (a reset connection); returns every payload
    sent to `path`, in order."""
    sent: List[Dict[str, Any]] = []
    real = client._send
    lock = threading.Lock()

    def send(to: str, payload: Dict[str, Any]) -> Any:
        answer = real(to, payload)
        if to == path:
            with lock:
                sent.append(payload)
                if len(sent) == 1:
                    raise ConnectionResetError("connection reset by peer")
        return answer

    client._reporter._send = send
    client._tracker._send = send
    return sent


class ReportUsageTest(LiveCase):
    def test_cached_uses_are_reported_once_when_a_report_is_retried_after_its_answer_was_lost(self) -> None:
        recorder = Recorder()
        client = self.client(report_interval=60, on_error=recorder)
        self.connected(client)  # else the answer fetched while the stream connects is not cached, and asked again
        key = KEYS["reported"]["key"]
        for _ in range(30):
            self.assertTrue(client.check(key).valid)
        sent = lose_first_answer(client, "admin/serviceapikey/report_usage")
        client.flush()
        self.assertEqual(recorder.whats(), ["usage report"])
        client.flush()
        self.assertEqual(len(sent), 2)
        self.assertEqual(sent[0], sent[1], "the retry is the same batch, with the same id")
        self.assertEqual(sent[0]["usage"][0]["count"], 29)  # the first check was counted by Tollgate itself
        for _ in range(20):
            client.check(key)
        client.close()
        self.assertEqual(usage_total("reported"), 50)


class TrackTest(LiveCase):
    def test_tracked_events_are_stored_once_when_a_batch_is_retried_after_its_answer_was_lost(self) -> None:
        client = self.client(report_interval=60)
        key = KEYS["metered"]["key"]
        ids = [client.track(key, "tokens", value, {"model": "large"}) for value in range(1, 26)]
        self.assertEqual(len(set(ids)), 25)
        sent = lose_first_answer(client, "admin/usage/ingest")
        client.flush()
        client.flush()
        self.assertEqual(len(sent), 2)
        self.assertEqual(sent[0], sent[1], "the retry carries the same events, ids and timestamps")
        stored = [row for row in stored_events("metered") if row[0] in ids]
        self.assertEqual(len(stored), 25)
        self.assertEqual(sum(row[2] for row in stored), sum(range(1, 26)))
        # A caller's own id makes its own retries count once too.
        client.track(key, "tokens", 5, event_id="job-17-tokens")
        client.track(key, "tokens", 5, event_id="job-17-tokens")
        client.close()
        self.assertEqual([row for row in stored_events("metered") if row[0] == "job-17-tokens"], [("job-17-tokens", "tokens", 5)])

    def test_close_sends_what_is_left(self) -> None:
        client = self.client(report_interval=60)
        ids = [client.track(KEYS["metered"]["key"], "tokens", 1) for _ in range(3)]
        client.close()
        self.assertEqual(len([row for row in stored_events("metered") if row[0] in ids]), 3)
        with self.assertRaises(RuntimeError):
            client.track(KEYS["metered"]["key"], "tokens", 1)

    def test_events_tollgate_rejects_are_reported_once_each_and_not_sent_again(self) -> None:
        recorder = Recorder()
        client = self.client(report_interval=60, on_error=recorder)
        good = client.track(KEYS["metered"]["key"], "tokens", 3)
        unknown_meter = client.track(KEYS["metered"]["key"], "no_such_meter", 1)
        count_with_value = client.track(KEYS["metered"]["key"], "calls", 2)
        client.flush()
        rejected = {error.event_id: error.code for what, error in recorder.seen if isinstance(error, EventRejected)}
        self.assertEqual(rejected, {unknown_meter: "UNKNOWN_METER", count_with_value: "VALUE_NOT_ALLOWED"})
        self.assertFalse(client._tracker.outstanding)
        self.assertIn(good, [row[0] for row in stored_events("metered")])

    def test_what_tollgate_would_certainly_refuse_is_refused_at_the_call(self) -> None:
        client = self.client()
        key = KEYS["metered"]["key"]
        for value, error in ((-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError), (True, TypeError), ("3", TypeError)):
            with self.assertRaises(error, msg=repr(value)):
                client.track(key, "tokens", value)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            client.track(key, "tokens", 1, {"not json": {1, 2}})
        with self.assertRaises(ValueError):
            client.track("", "tokens", 1)
        self.assertFalse(client._tracker.outstanding)
