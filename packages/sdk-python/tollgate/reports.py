"""Uses answered from the cache, reported with `admin/serviceapikey/report_usage` (CONTRACT §11).

The first check of a key is counted by Tollgate itself; every answer from the cache is counted here. Counts are cut
into batches with a random id; a batch that failed stays at the head of the queue and is sent again with the same id,
so Tollgate, which ignores a batch id it has seen, never counts it twice.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from typing import Any, Callable, Dict, List

from .http import TollgateHttpError

MAX_COUNT_PER_ITEM = 1_000_000_000
MAX_ITEMS_PER_BATCH = 10_000

Send = Callable[[str, Dict[str, Any]], Any]
OnError = Callable[[BaseException, str], None]


class UsageReporter:
    def __init__(self, send: Send, on_error: OnError) -> None:
        self._send = send
        self._on_error = on_error
        #: key id → uses not yet in a batch.
        self._pending: Dict[int, int] = {}
        #: Batches cut but not acknowledged, oldest first.
        self._unsent: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        #: One report at a time: two at once could send one batch twice in parallel, then drop it twice.
        self._reporting = threading.Lock()
        #: Tollgate answered 429: no report before this (monotonic seconds).
        self._not_before = 0.0

    def count(self, key_id: int) -> None:
        with self._lock:
            self._pending[key_id] = self._pending.get(key_id, 0) + 1

    @property
    def outstanding(self) -> bool:
        with self._lock:
            return bool(self._pending) or bool(self._unsent)

    def flush(self) -> None:
        """Cuts what was counted into batches and sends every batch not yet acknowledged; failures stay queued."""
        with self._reporting:
            with self._lock:
                items = [(key_id, min(count, MAX_COUNT_PER_ITEM)) for key_id, count in self._pending.items()]
                self._pending = {}
                for start in range(0, len(items), MAX_ITEMS_PER_BATCH):
                    usage = [{"key_id": key_id, "count": count} for key_id, count in items[start : start + MAX_ITEMS_PER_BATCH]]
                    self._unsent.append({"batch_id": uuid.uuid4().hex, "usage": usage})
            if time.monotonic() < self._not_before:
                return
            while True:
                with self._lock:
                    if not self._unsent:
                        return
                    batch = self._unsent[0]
                try:
                    self._send("admin/serviceapikey/report_usage", batch)
                except TollgateHttpError as error:
                    if error.status == 422:
                        self._refused(batch, error)
                        continue
                    if error.status == 429:
                        self._not_before = time.monotonic() + (error.retry_after or 1)
                    self._on_error(error, "usage report")
                    return  # kept, with its id, for the next attempt
                except Exception as error:  # noqa: BLE001 - network errors, timeouts, garbage: all retried
                    self._on_error(error, "usage report")
                    return
                with self._lock:
                    self._unsent.remove(batch)

    def _refused(self, batch: Dict[str, Any], error: TollgateHttpError) -> None:
        # A key deleted since it was cached: Tollgate refused the whole batch (and recorded nothing), so the same id can
        # carry the batch without that key. Anything else refused is dropped, not retried forever.
        item = re.search(r"usage\.(\d+)\.key_id", error.detail)
        with self._lock:
            if item is not None and len(batch["usage"]) > 1 and int(item.group(1)) < len(batch["usage"]):
                del batch["usage"][int(item.group(1))]
            else:
                self._unsent.remove(batch)
        self._on_error(error, "usage report refused")
