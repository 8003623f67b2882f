"""Whose memory this is: the (user, agent, channel) scope every tier keys its data by.

One home can serve many people (a gateway), several agents and several channels. Every read in the
session archive and the memory graph is confined to exactly one scope, matched on all three ids: the
empty string is a scope like any other (the default, single-user one), never a wildcard. A session or a
memory written under one scope is invisible from every other scope.

:func:`path_segment` turns a user id into a directory name for per-user curated memory.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from .errors import InvalidArgument

MAX_ID_CHARS = 200
# Kept as they are in a directory name; everything else is %-escaped. No upper case (case-insensitive
# file systems would fold "Bob" into "bob") and no dot (".." would climb out of the directory).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_SEGMENT_BYTES = 240  # under the 255-byte name limit of common file systems


def check_id(value: object, field: str) -> str:
    """A scope id as given, or :class:`InvalidArgument` naming ``field``: it must be a string of at most
    ``MAX_ID_CHARS`` characters, valid Unicode, without control characters."""
    if not isinstance(value, str):
        raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
    if len(value) > MAX_ID_CHARS:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {MAX_ID_CHARS}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(field, "contains invalid Unicode") from None
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise InvalidArgument(field, "must not contain control characters")
    return value


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory this is. One database serves several users, agents and channels; every query is
    confined to exactly one scope (empty strings are a scope like any other, not a wildcard)."""

    user_id: str = ""
    agent_id: str = ""
    channel_id: str = ""

    def __post_init__(self) -> None:
        for name in ("user_id", "agent_id", "channel_id"):
            check_id(getattr(self, name), name)

    def as_dict(self) -> dict[str, str]:
        """The three ids by name."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "channel_id": self.channel_id}

    def as_params(self) -> tuple[str, str, str]:
        """The three ids in column order, as SQL bind values."""
        return (self.user_id, self.agent_id, self.channel_id)


def path_segment(user_id: str) -> str:
    """``user_id`` as one directory name: injective (two ids never share a name, whatever the file
    system's case folding), never ``.``/``..``, never a path separator.

    Lower-case ASCII letters, digits, ``-`` and ``_`` are kept; every other character becomes ``%xx``
    per UTF-8 byte (lower-case hex), ``%`` included. Refuses the empty id and ids whose name would
    exceed ``MAX_SEGMENT_BYTES``.
    """
    check_id(user_id, "user_id")
    if not user_id:
        raise InvalidArgument("user_id", "must not be empty for a per-user directory")
    segment = "".join(ch if ch in _PLAIN else "".join(f"%{b:02x}" for b in ch.encode("utf-8")) for ch in user_id)
    if len(segment) > MAX_SEGMENT_BYTES:
        raise InvalidArgument("user_id", f"is too long for a per-user directory ({len(segment)} bytes escaped; limit {MAX_SEGMENT_BYTES})")
    return segment
