"""Issue 27, done when: a Flask app and a FastAPI app guarded by the SDK run against a real Tollgate process. The apps
are the Developers page's Python quick starts as printed (web/src/admin/quick-start-python.ts, written out with this
Tollgate's URL into TOLLGATE_QUICKSTART_DIR); each runs as its own server process (tests/servers/serve.py) on this
interpreter (Debian's python3, where python3-flask, python3-fastapi and python3-uvicorn are installed). Requests go
over real sockets: a valid key passes with its config, no key is 401 MISSING_KEY, a key revoked meanwhile is 401
INVALID_KEY within a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from typing import Dict, Optional, Tuple

from tests.support import KEYS, VERIFIER_TOKEN, set_valid

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def get(url: str, headers: Dict[str, str]) -> Tuple[int, dict]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class App:
    """The quick start for `name` served by `python3 tests/servers/serve.py`, the SDK importable; `url` once it
    printed its port."""

    def __init__(self, name: str) -> None:
        env = dict(os.environ, TOLLGATE_VERIFIER_TOKEN=VERIFIER_TOKEN, PYTHONPATH=SDK_DIR)
        app_file = os.path.join(os.environ["TOLLGATE_QUICKSTART_DIR"], f"quickstart_{name}.py")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(SDK_DIR, "tests", "servers", "serve.py"), name, app_file],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr = ""
        threading.Thread(target=self._drain, daemon=True).start()
        line = self._first_line(timeout=30)
        if line is None or not line.startswith("listening "):
            self.stop()
            raise AssertionError(f"{name} did not start: {line!r} {self.stderr}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/data"

    def _first_line(self, timeout: float) -> Optional[str]:
        found: Dict[str, str] = {}
        reader = threading.Thread(target=lambda: found.setdefault("line", self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        return found.get("line", None)

    def _drain(self) -> None:
        for line in self.process.stderr:  # type: ignore[union-attr]
            self.stderr += line

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class GuardedAppsTest(unittest.TestCase):
    def check_app(self, name: str, tier: str) -> None:
        app = App(name)
        self.addCleanup(app.stop)
        valid = KEYS[name]["key"]
        self.assertEqual(get(app.url, {"X-API-Key": valid}), (200, {"tier": tier}))
        self.assertEqual(get(app.url, {"Authorization": f"Bearer {valid}"}), (200, {"tier": tier}))
        status, body = get(app.url, {})
        self.assertEqual((status, body["error"]["code"]), (401, "MISSING_KEY"))

        revoked = KEYS[f"{name}_revoked"]["key"]
        self.assertEqual(get(app.url, {"X-API-Key": revoked})[0], 200)
        set_valid(f"{name}_revoked", False)
        since = time.monotonic()
        while time.monotonic() - since < 3:
            status, body = get(app.url, {"X-API-Key": revoked})
            if status != 200:
                break
            time.sleep(0.02)
        self.assertEqual((status, body["error"]["code"]), (401, "INVALID_KEY"))
        self.assertLess(time.monotonic() - since, 1.0, "revocation seen within a second")
        self.assertNotIn("Traceback", app.stderr)

    def test_flask(self) -> None:
        self.check_app("flask", "flask")

    def test_fastapi(self) -> None:
        self.check_app("fastapi", "fastapi")
