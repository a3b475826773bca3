"""Metered events (`track`) sent to `admin/usage/ingest` in batches (docs/metering.md).

Each event gets its id and timestamp when it is tracked, so a batch sent again after a lost answer carries the same
ids (Tollgate stores an id once per order) and lands in the usage period it happened in. A batch that failed stays at
the head of the queue and is retried as it was; events Tollgate rejects one by one are reported and dropped (sending
them again could not change the answer).
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional

from .http import TollgateHttpError

MAX_EVENTS_PER_BATCH = 1000
#: Under Tollgate's default 1 MB body limit, with room for the envelope.
MAX_BATCH_BYTES = 900_000
#: Events kept while Tollgate cannot be reached; past it the oldest are dropped (and reported), not memory exhausted.
MAX_QUEUED_EVENTS = 100_000

Send = Callable[[str, Dict[str, Any]], Any]
OnError = Callable[[BaseException, str], None]


class EventRejected(Exception):
    """Tollgate refused one tracked event (docs/metering.md lists the codes); it is not sent again."""

    def __init__(self, event_id: str, meter: str, code: str, message: str) -> None:
        super().__init__(f"event {event_id} ({meter}) rejected: {code} {message}")
        self.event_id = event_id
        self.meter = meter
        self.code = code
        self.message = message


class QueueOverflow(Exception):
    """Events were dropped because Tollgate could not take them for too long."""


def new_event(key: str, meter: str, value: Any, properties: Optional[Mapping[str, Any]], event_id: Optional[str], timestamp: Optional[datetime]) -> Dict[str, Any]:
    """The event as ingest takes it; TypeError or ValueError for what Tollgate would certainly refuse."""
    if not isinstance(key, str) or key == "":
        raise ValueError("key must be a non-empty string")
    if not isinstance(meter, str) or meter == "":
        raise ValueError("meter must be a non-empty string")
    event: Dict[str, Any] = {"id": event_id if event_id is not None else uuid.uuid4().hex, "key": key, "meter": meter}
    if not isinstance(event["id"], str) or not 1 <= len(event["id"]) <= 128:
        raise ValueError("event_id must be 1-128 characters")
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("value must be a number")
        if not math.isfinite(value) or value < 0:
            raise ValueError("value must be a finite number >= 0")
        event["value"] = value
    if properties is not None:
        if not isinstance(properties, Mapping):
            raise TypeError("properties must be a dict")
        event["properties"] = dict(properties)
    when = timestamp if timestamp is not None else datetime.now(timezone.utc)
    if when.tzinfo is None:
        raise ValueError("timestamp must carry a time zone")
    event["timestamp"] = when.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    json.dumps(event)  # not JSON (a set, an object in properties): the caller's mistake, raised now
    return event


class Tracker:
    def __init__(self, send: Send, on_error: OnError) -> None:
        self._send = send
        self._on_error = on_error
        self._queue: List[Dict[str, Any]] = []
        #: The batch being (re)sent: kept as it was so a retry repeats it exactly.
        self._batch: Optional[List[Dict[str, Any]]] = None
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._not_before = 0.0

    def add(self, event: Dict[str, Any]) -> None:
        with self._lock:
            self._queue.append(event)
            overflow = len(self._queue) - MAX_QUEUED_EVENTS
            if overflow > 0:
                del self._queue[:overflow]
        if overflow > 0:
            self._on_error(QueueOverflow(f"{overflow} tracked event(s) dropped: Tollgate has not taken them for too long"), "track queue full")

    @property
    def outstanding(self) -> bool:
        with self._lock:
            return bool(self._queue) or self._batch is not None

    def flush(self) -> None:
        """Sends every queued event; a failed batch stays first in line, with its ids."""
        with self._sending:
            if time.monotonic() < self._not_before:
                return
            while True:
                batch = self._next_batch()
                if batch is None:
                    return
                try:
                    answer = self._send("admin/usage/ingest", {"events": batch})
                except TollgateHttpError as error:
                    if error.status == 413 and len(batch) > 1:
                        self._split(batch)
                        continue
                    if error.status in (400, 413, 422):
                        self._done()  # malformed as a whole: sending it again cannot help
                        self._on_error(error, "track refused")
                        continue
                    if error.status == 429:
                        self._not_before = time.monotonic() + (error.retry_after or 1)
                    self._on_error(error, "track")
                    return
                except Exception as error:  # noqa: BLE001 - network errors, timeouts, garbage: all retried
                    self._on_error(error, "track")
                    return
                self._done()
                rejected = answer.get("rejected") if isinstance(answer, dict) else None
                for item in rejected if isinstance(rejected, list) else []:
                    index = item.get("index") if isinstance(item, dict) else None
                    if isinstance(index, int) and 0 <= index < len(batch):
                        event = batch[index]
                        self._on_error(EventRejected(event["id"], event["meter"], str(item.get("code")), str(item.get("message"))), "track rejected")

    def _next_batch(self) -> Optional[List[Dict[str, Any]]]:
        with self._lock:
            if self._batch is None and self._queue:
                size = 0
                count = 0
                for event in self._queue[:MAX_EVENTS_PER_BATCH]:
                    size += len(json.dumps(event)) + 1
                    if count > 0 and size > MAX_BATCH_BYTES:
                        break
                    count += 1
                self._batch = self._queue[:count]
                del self._queue[:count]
            return self._batch

    def _done(self) -> None:
        with self._lock:
            self._batch = None

    def _split(self, batch: List[Dict[str, Any]]) -> None:
        # Too large for this server's body limit: send it in halves (same events, same ids).
        half = len(batch) // 2
        with self._lock:
            self._batch = batch[:half]
            self._queue[:0] = batch[half:]
