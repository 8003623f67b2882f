"""Times as mnemo stores and shows them: Unix seconds inside, ISO 8601 UTC outside."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from .errors import InvalidArgument, excerpt


def to_timestamp(value: Any, field: str = "timestamp") -> float:
    """Seconds since the epoch from a number, a :class:`datetime` or an ISO 8601 string (UTC if naive)."""
    if isinstance(value, bool):
        raise InvalidArgument(field, "must be a time, not a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidArgument(field, "must be a finite number of seconds")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        except ValueError as exc:
            raise InvalidArgument(field, f"{excerpt(text)} is not an ISO 8601 date or time") from exc
    if isinstance(value, datetime):
        return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()
    raise InvalidArgument(field, f"must be a number, datetime or ISO 8601 string, got {type(value).__name__}")


def iso(timestamp: float | None) -> str | None:
    """ISO 8601 UTC text (``...Z``) for a stored timestamp; None stays None."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
