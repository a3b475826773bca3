"""Tollgate's Python SDK: verify API keys in-process, hear revocations within a second, report usage exactly once.

    from tollgate import Tollgate
    tollgate = Tollgate("https://billing.example.com", verifier_token)
    result = tollgate.check(key)        # result.valid, result.reason, result.config, result.usage

Standard library only (Python >= 3.9). See README.md.
"""

from .asgi import TollgateASGI
from .client import Tollgate
from .guard import Refusal, read_key, refusal_of
from .http import ProtocolError, TollgateHttpError
from .result import REASONS, CheckResult
from .tracking import EventRejected, QueueOverflow
from .wsgi import TollgateWSGI

__version__ = "0.1.0"

__all__ = [
    "REASONS",
    "CheckResult",
    "EventRejected",
    "ProtocolError",
    "QueueOverflow",
    "Refusal",
    "Tollgate",
    "TollgateASGI",
    "TollgateHttpError",
    "TollgateWSGI",
    "read_key",
    "refusal_of",
]
