"""Tollgate's key events (Server-Sent Events, CONTRACT §11) read in a background thread.

Connects, parses `id:` and `data:` lines, sends Last-Event-ID when reconnecting, and reconnects with a short backoff
(0.1 s doubling to 1 s, so a dropped stream is back within about a second of the server returning). A stream silent
for `idle_timeout` seconds counts as dropped (the server writes a comment every 15 s). `connected` is what the cache
trusts: while it is False, cached answers older than one second are not served.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any, Callable, List, Optional, Tuple

from .http import TollgateHttpError, connect

MAX_BACKOFF = 1.0


class EventStream:
    def __init__(
        self,
        base: Tuple[str, str, int, str],
        authorization: str,
        idle_timeout: float,
        on_event: Callable[[Any], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self._base = base
        self._authorization = authorization
        self._idle_timeout = idle_timeout
        self._on_event = on_event
        self._on_error = on_error
        self.connected = False
        self._last_event_id: Optional[str] = None
        self._stopped = threading.Event()
        self._sock: Optional[socket.socket] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tollgate-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self.connected = False
        sock = self._sock
        if sock is not None:
            try:
                # Wakes the thread's blocking read at once (closing alone may not, on every platform).
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        backoff = 0.1
        while not self._stopped.is_set():
            try:
                self._connect_and_read()
            except Exception as error:  # noqa: BLE001 - every failure means: reconnect
                if not self._stopped.is_set():
                    self._on_error(error)
            finally:
                if self.connected:
                    backoff = 0.1  # it was up: come back quickly
                self.connected = False
                self._sock = None
            if self._stopped.wait(backoff):
                return
            backoff = min(backoff * 2, MAX_BACKOFF)

    def _connect_and_read(self) -> None:
        conn = connect(self._base, self._idle_timeout)
        response = None
        try:
            headers = {"Authorization": self._authorization, "Accept": "text/event-stream"}
            if self._last_event_id is not None:
                headers["Last-Event-ID"] = self._last_event_id
            conn.connect()
            self._sock = conn.sock
            if self._stopped.is_set():
                return
            conn.request("GET", f"{self._base[3]}/api/admin/serviceapikey/events", headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                raise TollgateHttpError(response.status, None, f"the events stream answered HTTP {response.status}")
            # Without a Last-Event-ID nothing can be replayed: whatever was cached before is suspect.
            if self._last_event_id is None:
                self._on_event({"type": "connected"})
            self.connected = True
            self._read(response)
        finally:
            if response is not None:
                response.close()
            conn.close()

    def _read(self, response: Any) -> None:
        data: List[str] = []
        event_id: Optional[str] = None
        while not self._stopped.is_set():
            raw = response.readline()
            if not raw:
                raise ConnectionError("events stream ended")
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line == "":
                if event_id is not None:
                    self._last_event_id = event_id
                if data:
                    self._dispatch("\n".join(data))
                data = []
                event_id = None
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            # comments (":") and other fields are ignored

    def _dispatch(self, text: str) -> None:
        try:
            event = json.loads(text)
        except ValueError as error:
            self._on_error(error)
            return
        self._on_event(event)
