"""The in-process cache of verdicts: a thread-safe LRU with the Node SDK's rules.

- Valid answers live `ttl` seconds, refusals `negative_ttl`; a RATE_LIMITED answer lives until its retry_after (the
  server said when to ask again; asking sooner only spends its budget). Failures are never stored.
- While the events stream is down, an answer older than one second is not served (the server is asked again).
- A valid answer's `usage.remaining` is counted down with each hit; at zero the caller must let the server judge.
- The LRU bound keeps a flood of random keys (each cached as NOT_FOUND) from growing memory without end.
- `epoch` moves with every event: an answer fetched across an event is not stored, as it may predate the change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, Optional, Set, Tuple

from .result import CheckResult

#: While the events stream is down, cached answers older than this (seconds) are not served.
UNTRUSTED_MAX_AGE = 1.0

MISS = "miss"
HIT = "hit"
#: The local countdown reached zero: report the counted uses, then ask the server (whose answer replaces the entry).
EXHAUSTED = "exhausted"


@dataclass
class _Entry:
    result: CheckResult
    fetched_at: float
    expires_at: float
    #: The server answered VALID past the limit: the plan does not enforce it, so nothing to count down.
    past_limit_ok: bool


class KeyCache:
    def __init__(self, ttl: float, negative_ttl: float, max_entries: int) -> None:
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.max_entries = max(1, max_entries)
        self._entries: "OrderedDict[str, _Entry]" = OrderedDict()
        #: key id → cached keys (a key.changed event names ids, never keys).
        self._by_key_id: Dict[int, Set[str]] = {}
        self._lock = threading.Lock()
        self.epoch = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: str, now: float, trusted: bool) -> Tuple[str, Optional[CheckResult]]:
        """(HIT, verdict) counted down, (EXHAUSTED, None) or (MISS, None). `trusted`: the events stream is up."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return MISS, None
            if entry.expires_at <= now or (not trusted and now - entry.fetched_at > UNTRUSTED_MAX_AGE):
                self._forget(key)
                return MISS, None
            self._entries.move_to_end(key)
            result = entry.result
            usage = result.usage
            if not result.valid:
                return HIT, result
            if usage is not None and usage.get("remaining") is not None and not entry.past_limit_ok:
                if usage["remaining"] <= 0:
                    # Kept (still at zero): every caller until the server's next answer replaces it gets EXHAUSTED and
                    # goes through the one coalesced flush-then-ask, so none is answered from unreported uses.
                    return EXHAUSTED, None
                usage["remaining"] -= 1
            if usage is not None and isinstance(usage.get("used"), int):
                usage["used"] += 1
            # A copy: the entry's usage moves on under the lock while the caller reads its own.
            return HIT, result.with_usage(dict(usage) if usage is not None else None)

    def store(self, key: str, result: CheckResult, fetched_at: float, epoch: int) -> None:
        """Stores the server's answer, fetched at `fetched_at` while the epoch was `epoch`."""
        if result.reason in ("UNAVAILABLE", "UNAUTHORIZED"):
            return  # about Tollgate or this client, not the key: ask again next time
        if result.reason == "RATE_LIMITED":
            ttl = result.retry_after or 0
        else:
            ttl = self.ttl if result.valid else self.negative_ttl
        if ttl <= 0:
            return
        usage = result.usage
        limit = usage.get("limit") if usage is not None else None
        used = usage.get("used") if usage is not None else None
        past_limit_ok = result.valid and isinstance(limit, int) and isinstance(used, int) and used > limit
        with self._lock:
            if self.epoch != epoch:
                return
            self._forget(key)
            # The entry owns its usage: the caller's result keeps the numbers as the server gave them.
            own = result.with_usage(dict(usage) if usage is not None else None)
            self._entries[key] = _Entry(own, fetched_at, fetched_at + ttl, past_limit_ok)
            if result.key_id is not None:
                self._by_key_id.setdefault(result.key_id, set()).add(key)
            while len(self._entries) > self.max_entries:
                self._forget(next(iter(self._entries)))

    def forget(self, key: str) -> None:
        with self._lock:
            self._forget(key)

    def drop_key_id(self, key_id: int) -> None:
        """A key.changed event: every cached key of that id goes."""
        with self._lock:
            self.epoch += 1
            for key in self._by_key_id.pop(key_id, set()):
                self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self.epoch += 1
            self._entries.clear()
            self._by_key_id.clear()

    def bump(self) -> None:
        """Any event: answers in flight may predate it."""
        with self._lock:
            self.epoch += 1

    def _forget(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None or entry.result.key_id is None:
            return
        keys = self._by_key_id.get(entry.result.key_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_key_id[entry.result.key_id]
