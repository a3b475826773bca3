"""The default on_error: the first failure of each kind is logged, the rest stay quiet.

So a wrong verifier token or an unreachable Tollgate shows up in the app's log once, instead of never (or on every
request). The logger is `tollgate`; with no logging configured, Python's last-resort handler prints it on stderr.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Set

from .http import TollgateHttpError

logger = logging.getLogger("tollgate")

REFUSED_HINT = (
    "Tollgate refused the verifier token: create one in the admin panel under Developers → Verifier tokens (or with "
    "admin/staff/verifier_create) and pass it as `verifier_token`. Keys are refused (reason UNAUTHORIZED) until then."
)

OnError = Callable[[BaseException, str], None]


def is_refused_token(error: BaseException) -> bool:
    """A 401/403 from Tollgate: the token is unknown, deactivated, or lacks `serviceapikey.check`."""
    return isinstance(error, TollgateHttpError) and error.status in (401, 403)


def log_once(log: logging.Logger = logger) -> OnError:
    seen: Set[str] = set()
    lock = threading.Lock()

    def on_error(error: BaseException, what: str) -> None:
        kind = "refused token" if is_refused_token(error) else what
        with lock:
            if kind in seen:
                return
            seen.add(kind)
        hint = f". {REFUSED_HINT}" if kind == "refused token" else ""
        log.error("%s: %s%s (further %s failures are not logged)", what, str(error) or type(error).__name__, hint, kind)

    return on_error
