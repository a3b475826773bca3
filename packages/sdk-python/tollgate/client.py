"""`Tollgate`: verifies API keys inside the operator's app (CONTRACT §11), as the Node SDK (packages/sdk) does.

- Answers from an in-process cache (cache.py: valid keys for `cache_ttl`, refused keys for `negative_ttl`);
  concurrent checks of one uncached key share one request.
- Listens to the events stream in a background thread (events.py): a key.changed event drops the key at once, so a
  revoked key is refused as soon as the event arrives. While the stream is down, cached answers older than one second
  are not served, and after reconnecting the server replays what was missed (or says "resync": the cache is cleared).
- Uses answered from the cache are counted here and reported every `report_interval` and on close() (reports.py);
  `track` sends metered events the same way (tracking.py). Both retry failed batches with the same ids.
- `usage.remaining` is counted down locally; at zero the counted uses are reported and the server asked, so a hard
  limit holds.
- Timeouts, network errors, 5xx and garbled answers follow `fail_open` (valid: fail_open, reason UNAVAILABLE).
- A verifier token Tollgate refuses (401/403) is a configuration error, not an outage: reason UNAUTHORIZED, never
  valid whatever fail_open says, and the default on_error logs it once.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import threading
import time
import weakref
from concurrent.futures import Future
from datetime import datetime
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from .cache import EXHAUSTED, HIT, KeyCache
from .events import EventStream
from .http import TollgateHttpError, basic_authorization, post_json, split_base_url
from .log import OnError, log_once
from .reports import UsageReporter
from .result import NOT_FOUND, CheckResult, from_info, refused
from .tracking import Tracker, new_event

#: Longer than any key Tollgate issues (128 characters and 127 dashes): longer ones are refused without asking.
MAX_KEY_LENGTH = 256
#: Tollgate takes plain IPv4/IPv6 text; anything else (a zone id, a host name) is left out rather than refused.
_PLAIN_IP = re.compile(r"^[0-9A-Fa-f.:]{2,45}\Z")


class Tollgate:
    def __init__(
        self,
        base_url: str,
        verifier_token: str,
        *,
        cache_ttl: float = 10.0,
        negative_ttl: float = 3.0,
        timeout: float = 2.0,
        fail_open: bool = False,
        report_interval: float = 1.0,
        stream_idle_timeout: float = 45.0,
        max_cache_entries: int = 10_000,
        on_error: Optional[OnError] = None,
    ) -> None:
        """`base_url`: where Tollgate answers (https://billing.example.com). `verifier_token`: the API token of a staff
        member whose group holds `serviceapikey.check`. Times are in seconds."""
        if not isinstance(verifier_token, str) or verifier_token == "":
            raise ValueError("verifier_token is required")
        self._base = split_base_url(base_url)
        self._authorization = basic_authorization(verifier_token)
        self._timeout = timeout
        self._fail_open = fail_open
        self._report_interval = report_interval
        self._stream_idle_timeout = stream_idle_timeout
        self._cache_settings = (cache_ttl, negative_ttl, max_cache_entries)
        self._on_error: OnError = on_error if on_error is not None else log_once()
        self._closed = False
        self._pid: Optional[int] = None
        self._start_lock = threading.Lock()
        self._fresh_state()
        self._ensure_running()
        # Uses counted but not reported when the interpreter exits would be lost: report them on the way out.
        self._atexit: Callable[[], None] = functools.partial(_close_at_exit, weakref.ref(self))
        atexit.register(self._atexit)

    # ---- public ---------------------------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the events stream is up (cached answers are then trusted for their whole TTL)."""
        return self._stream.connected

    def check(self, key: str, ip: Optional[str] = None) -> CheckResult:
        """The verdict on `key`; `ip` is the end user's address (failed lookups count against it, not this server)."""
        if not isinstance(key, str) or key == "" or len(key) > MAX_KEY_LENGTH:
            return NOT_FOUND
        self._ensure_running()
        state, result = self._cache.lookup(key, time.monotonic(), self._stream.connected)
        if state == HIT and result is not None:
            return self._counted(result)
        return self._fetch_coalesced(key, ip, flush_first=state == EXHAUSTED)

    def check_cached(self, key: str) -> Optional[CheckResult]:
        """The verdict when the cache can give it (counted like `check`), else None and nothing asked: for callers
        that must not block, such as the ASGI middleware, which then calls `check` in a thread."""
        if not isinstance(key, str) or key == "" or len(key) > MAX_KEY_LENGTH:
            return NOT_FOUND
        self._ensure_running()
        state, result = self._cache.lookup(key, time.monotonic(), self._stream.connected)
        return self._counted(result) if state == HIT and result is not None else None

    def get_info(self, key: str, ip: Optional[str] = None) -> Dict[str, Any]:
        """`check`'s verdict as a dict with get_info's field names (valid, reason, order_id, key_id, config, usage,
        retry_after), for code written against Tollgate's get_info. Same cache, counted the same way."""
        return self.check(key, ip).as_dict()

    def portal_session(
        self,
        client_id: int,
        scopes: Optional[Sequence[str]] = None,
        return_url: Optional[str] = None,
        expires_in: Optional[int] = None,
    ) -> Dict[str, Any]:
        """A single-use link to `client_id`'s customer portal (admin/portal/session_create): a dict with Tollgate's
        field names, {id, url, client_id, scopes, return_url, expires_at}. `scopes` among keys, usage, invoices and
        wallet (all when None); `expires_in` in seconds (60-86400, 900 by default). Frame `url` on an origin listed
        in Tollgate's portal_frame_ancestors setting, or redirect to it. The token needs the `portal` scope; a refusal
        raises TollgateHttpError with Tollgate's message."""
        if not isinstance(client_id, int) or isinstance(client_id, bool) or client_id < 1:
            raise TypeError("client_id must be a positive integer")
        payload: Dict[str, Any] = {"client_id": client_id}
        if scopes is not None:
            payload["scopes"] = list(scopes)
        if return_url is not None:
            payload["return_url"] = return_url
        if expires_in is not None:
            payload["expires_in"] = expires_in
        return self._send("admin/portal/session_create", payload)

    def track(
        self,
        key: str,
        meter: str,
        value: Optional[float] = None,
        properties: Optional[Mapping[str, Any]] = None,
        *,
        event_id: Optional[str] = None,
        timestamp: Optional[datetime] = None,
    ) -> str:
        """Queues a metered event (docs/metering.md) and returns its id; sent within `report_interval`, in batches.
        Pass `event_id` to make a retry of your own (a re-delivered job) count once too."""
        if self._closed:
            raise RuntimeError("this Tollgate client is closed")
        event = new_event(key, meter, value, properties, event_id, timestamp)
        self._ensure_running()
        self._tracker.add(event)
        return event["id"]

    def flush(self) -> None:
        """Reports counted uses and sends tracked events now (done every `report_interval` anyway)."""
        self._reporter.flush()
        self._tracker.flush()

    def close(self) -> None:
        """Stops the background threads and sends what is left (a few attempts)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._atexit)
        self._stop_worker.set()
        self._stream.stop()
        for _ in range(3):
            if not (self._reporter.outstanding or self._tracker.outstanding):
                break
            self.flush()
        self._cache.clear()

    def __enter__(self) -> "Tollgate":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ---- background threads ---------------------------------------------------------------------------------------

    def _fresh_state(self) -> None:
        """Everything a process owns alone. Built again in a forked child: its parent's locks may have been held at
        the fork, its threads did not survive it, and the uses counted before it are the parent's to report."""
        ttl, negative_ttl, max_entries = self._cache_settings
        self._cache = KeyCache(ttl, negative_ttl, max_entries)
        self._inflight: Dict[str, "Future[CheckResult]"] = {}
        self._flight_lock = threading.Lock()
        self._reporter = UsageReporter(self._send, self._on_error)
        self._tracker = Tracker(self._send, self._on_error)
        self._stop_worker = threading.Event()
        self._stream = EventStream(
            self._base,
            self._authorization,
            self._stream_idle_timeout,
            self._on_event,
            lambda error: self._on_error(error, "events stream"),
        )

    def _ensure_running(self) -> None:
        pid = os.getpid()
        if self._pid == pid or self._closed:
            return
        if self._pid is not None:  # forked: the parent's lock may be held forever here
            self._start_lock = threading.Lock()
        with self._start_lock:
            if self._pid == pid:
                return
            if self._pid is not None:
                self._fresh_state()
            self._stream.start()
            threading.Thread(target=self._work, name="tollgate-usage", daemon=True).start()
            self._pid = pid

    def _work(self) -> None:
        while not self._stop_worker.wait(self._report_interval):
            try:
                self.flush()
            except Exception as error:  # noqa: BLE001 - the thread must outlive any one failure
                self._on_error(error, "usage report")

    def _on_event(self, data: Any) -> None:
        kind = data.get("type") if isinstance(data, dict) else None
        if kind in ("resync", "connected"):
            self._cache.clear()
        elif kind == "key.changed" and isinstance(data.get("key_id"), int):
            self._cache.drop_key_id(data["key_id"])
        else:
            self._cache.bump()

    # ---- asking the server ----------------------------------------------------------------------------------------

    def _send(self, path: str, payload: Dict[str, Any]) -> Any:
        return post_json(self._base, path, self._authorization, payload, self._timeout)

    def _counted(self, result: CheckResult) -> CheckResult:
        if result.valid and result.key_id is not None:
            self._reporter.count(result.key_id)
        return result

    def _fetch_coalesced(self, key: str, ip: Optional[str], flush_first: bool) -> CheckResult:
        with self._flight_lock:
            flight = self._inflight.get(key)
            leader = flight is None
            if flight is None:
                flight = self._inflight[key] = Future()
        if not leader:
            # The server counted one use for the request; every caller that joined it is a use counted here.
            return self._joined(key, flight.result(), ip)
        try:
            if flush_first:
                self._reporter.flush()
            result = self._fetch(key, ip)
        except BaseException as error:
            flight.set_exception(error)
            raise
        finally:
            with self._flight_lock:
                del self._inflight[key]
        flight.set_result(result)
        return result

    def _joined(self, key: str, result: CheckResult, ip: Optional[str]) -> CheckResult:
        """A caller that shared another's request: a valid answer is one more use, counted down like a cache hit."""
        if not result.valid or result.key_id is None:
            return result
        state, hit = self._cache.lookup(key, time.monotonic(), self._stream.connected)
        if state == HIT and hit is not None:
            return self._counted(hit)
        if state == EXHAUSTED:
            return self.check(key, ip)
        # Not cached (cache_ttl 0, or an event arrived meanwhile): one more use of the answer as it came.
        return self._counted(result)

    def _fetch(self, key: str, ip: Optional[str]) -> CheckResult:
        epoch = self._cache.epoch
        started = time.monotonic()
        params: Dict[str, Any] = {"key": key}
        if isinstance(ip, str) and _PLAIN_IP.match(ip):
            params["ip"] = ip
        try:
            result = from_info(self._send("admin/serviceapikey/get_info", params))
        except TollgateHttpError as error:
            if error.status == 429:
                # This end user's address is over its failed-lookup budget (or this verifier over its own limit): not
                # cached, since it is about the address, not the key.
                return refused("RATE_LIMITED", retry_after=error.retry_after or 1)
            if error.status in (400, 422):
                # Tollgate refused the key as input (a NUL in it, say): no key can be that, and an outage it is not,
                # so fail_open must not let it in.
                return NOT_FOUND
            if error.status in (401, 403):
                # Retrying cannot help and failing open would open the API to anyone until someone notices.
                self._on_error(error, "verifier token refused")
                return refused("UNAUTHORIZED")
            self._on_error(error, "verify")
            return refused("UNAVAILABLE", valid=self._fail_open)
        except Exception as error:  # noqa: BLE001 - down, slow, garbled: all an outage for the caller
            self._on_error(error, "verify")
            return refused("UNAVAILABLE", valid=self._fail_open)
        if not self._closed:
            self._cache.store(key, result, started, epoch)
        return result


def _close_at_exit(ref: "weakref.ReferenceType[Tollgate]") -> None:
    client = ref()
    if client is not None:
        client.close()
