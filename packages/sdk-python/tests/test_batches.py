"""How usage reports and tracked events meet Tollgate's refusals, against stubs that refuse on cue: a 429 is waited
out (Retry-After), a body too large is split (same ids), a report naming a deleted key is sent again without it under
the same batch id, a batch malformed as a whole is dropped and reported."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Dict, List

from tests.support import LiveCase, Stub
from tollgate import TollgateHttpError


class Recording:
    """A stub Tollgate keeping every POSTed payload; `reply(path, payload)` → (status, body, headers)."""

    def __init__(self, reply: Callable[[str, Dict[str, Any]], Any]) -> None:
        self.payloads: List[Dict[str, Any]] = []

        def handle(handler: BaseHTTPRequestHandler) -> None:
            payload = json.loads(handler.body)  # type: ignore[attr-defined]
            self.payloads.append(payload)
            status, body, headers = reply(handler.path, payload)
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            data = json.dumps(body).encode()
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)

        self.stub = Stub(handle, keep_body=True)


def ok(result: Any) -> Any:
    return 200, {"result": result, "error": None}, {}


class BatchesTest(LiveCase):
    def recording(self, reply: Callable[[str, Dict[str, Any]], Any]) -> Recording:
        recording = Recording(reply)
        self.addCleanup(recording.stub.close)
        return recording

    def test_a_429_is_waited_out_for_reports_and_tracked_events(self) -> None:
        recording = self.recording(lambda path, payload: (429, {"result": None, "error": {"message": "slow down", "code": 429}}, {"Retry-After": "30"}))
        client = self.client(recording.stub.url, report_interval=60)
        client.track("KEY", "tokens", 1)
        client._reporter.count(5)
        client.flush()
        self.assertEqual(len(recording.payloads), 2)
        client.flush()
        client.flush()
        self.assertEqual(len(recording.payloads), 2, "nothing sent again before Retry-After")
        self.assertTrue(client._tracker.outstanding and client._reporter.outstanding, "kept for later, not dropped")

    def test_a_batch_too_large_for_the_server_is_split_with_the_same_ids(self) -> None:
        def reply(path: str, payload: Dict[str, Any]) -> Any:
            if len(payload["events"]) > 2:
                return 413, {"result": None, "error": {"message": "body too large", "code": 413}}, {}
            return ok({"accepted": len(payload["events"]), "duplicates": 0, "rejected": []})

        recording = self.recording(reply)
        client = self.client(recording.stub.url, report_interval=60)
        ids = [client.track("KEY", "tokens", value) for value in range(5)]
        client.flush()
        accepted = [event["id"] for payload in recording.payloads if len(payload["events"]) <= 2 for event in payload["events"]]
        self.assertEqual(sorted(accepted), sorted(ids))
        self.assertFalse(client._tracker.outstanding)

    def test_a_report_naming_a_deleted_key_goes_again_without_it_under_the_same_batch_id(self) -> None:
        def reply(path: str, payload: Dict[str, Any]) -> Any:
            keys = [item["key_id"] for item in payload["usage"]]
            if 2 in keys:
                return 422, {"result": None, "error": {"message": f"usage.{keys.index(2)}.key_id: no such key", "code": 422}}, {}
            return ok(True)

        recording = self.recording(reply)
        client = self.client(recording.stub.url, report_interval=60)
        for key_id in (1, 2, 3):
            client._reporter.count(key_id)
        client.flush()
        first, second = recording.payloads
        self.assertEqual(first["batch_id"], second["batch_id"])
        self.assertEqual([item["key_id"] for item in second["usage"]], [1, 3])
        self.assertFalse(client._reporter.outstanding)
        self.assertIn("usage report refused", client._on_error.whats())  # type: ignore[attr-defined]

    def test_a_batch_malformed_as_a_whole_is_dropped_and_reported(self) -> None:
        recording = self.recording(lambda path, payload: (422, {"result": None, "error": {"message": "events: must be a list", "code": 422}}, {}))
        client = self.client(recording.stub.url, report_interval=60)
        client.track("KEY", "tokens", 1)
        client.flush()
        client.flush()
        self.assertEqual(len(recording.payloads), 1)
        self.assertFalse(client._tracker.outstanding)
        refused = [error for what, error in client._on_error.seen if what == "track refused"]  # type: ignore[attr-defined]
        self.assertIsInstance(refused[0], TollgateHttpError)
        self.assertEqual(refused[0].status, 422)
