"""The verdict on a key, as `Tollgate.check` returns it (the Node SDK's VerifyResult, in Python's spelling)."""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Dict, Optional

#: Every reason `check` gives. UNAVAILABLE: Tollgate could not be asked (down, slower than `timeout`, 5xx, garbage);
#: `valid` is then the `fail_open` option. UNAUTHORIZED: Tollgate refused the verifier token; never valid.
REASONS = (
    "VALID",
    "NOT_FOUND",
    "DISABLED",
    "CLIENT_INACTIVE",
    "NOT_ACTIVE",
    "EXPIRED",
    "LIMIT_EXCEEDED",
    "RATE_LIMITED",
    "UNAVAILABLE",
    "UNAUTHORIZED",
)


@dataclass(frozen=True)
class CheckResult:
    valid: bool
    reason: str
    order_id: Optional[int] = None
    key_id: Optional[int] = None
    #: The key's custom parameters when valid, else None.
    config: Optional[Dict[str, Any]] = None
    #: {period_start, period_end, used, limit, remaining, ...} as Tollgate reports it (counted on locally).
    usage: Optional[Dict[str, Any]] = field(default=None, compare=False)
    #: Seconds to wait, for RATE_LIMITED (and LIMIT_EXCEEDED: until the usage period ends).
    retry_after: Optional[float] = None

    def __bool__(self) -> bool:
        return self.valid

    def as_dict(self) -> Dict[str, Any]:
        """The verdict with get_info's field names (what `Tollgate.get_info` returns)."""
        return {
            "valid": self.valid,
            "reason": self.reason,
            "order_id": self.order_id,
            "key_id": self.key_id,
            "config": self.config,
            "usage": dict(self.usage) if self.usage is not None else None,
            "retry_after": self.retry_after,
        }

    def with_usage(self, usage: Optional[Dict[str, Any]]) -> "CheckResult":
        return replace(self, usage=usage)


def refused(reason: str, valid: bool = False, retry_after: Optional[float] = None) -> CheckResult:
    return CheckResult(valid=valid, reason=reason, retry_after=retry_after)


NOT_FOUND = refused("NOT_FOUND")


def from_info(info: Any) -> CheckResult:
    """get_info's answer as a CheckResult; ValueError when it is not shaped like one (a garbled answer)."""
    if not isinstance(info, dict) or info.get("valid") not in (0, 1) or isinstance(info.get("valid"), float):
        raise ValueError("get_info answered without valid")
    reason = info.get("reason")
    if reason not in REASONS or reason in ("UNAVAILABLE", "UNAUTHORIZED"):
        raise ValueError("get_info answered an unknown reason")
    usage = info.get("usage")
    config = info.get("config")
    if (usage is not None and not isinstance(usage, dict)) or (config is not None and not isinstance(config, dict)):
        raise ValueError("get_info answered a malformed usage or config")
    retry_after: Optional[float] = None
    if reason == "RATE_LIMITED":
        raw = info.get("retry_after")
        retry_after = raw if isinstance(raw, (int, float)) and raw > 0 else 1
    elif reason == "LIMIT_EXCEEDED":
        retry_after = until_period_end(usage)
    return CheckResult(
        valid=info["valid"] == 1,
        reason=reason,
        order_id=_int_or_none(info.get("order_id")),
        key_id=_int_or_none(info.get("key_id")),
        config=config,
        usage=dict(usage) if usage is not None else None,
        retry_after=retry_after,
    )


def _int_or_none(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def until_period_end(usage: Optional[Dict[str, Any]]) -> Optional[float]:
    """Whole seconds until the end (23:59:59 UTC) of the usage period's last day; at least 1."""
    end = usage.get("period_end") if usage is not None else None
    try:
        day = date.fromisoformat(str(end)[:10])
    except ValueError:
        return None
    seconds = calendar.timegm(day.timetuple()) + 86399 - time.time()
    return float(max(1, int(seconds + 0.999)))
