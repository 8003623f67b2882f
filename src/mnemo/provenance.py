"""Where a memory came from: the origin mnemo stamps on every write, and how origins combine.

The origin is decided by mnemo from what it knows about the write (which door it came through, what had
entered the model's context by then: see :mod:`mnemo.taint`), never from anything the model says. Origins
fall into three trust levels:

- **trusted**: the user's own words, and the operator (CLI, typed API, import, restore, an approval);
- **model**: the model on its own, an MCP client, and memories written before mnemo kept origins;
- **untrusted**: the model after untrusted content entered its context (a tool result, a page, a mail),
  and another agent (a delegated result). These are quarantined (see :mod:`mnemo.review`).

Something derived from several inputs (an extraction from several messages, a merge) gets the *join*
of their origins: the least trusted of them. Nothing raises an origin but the user approving the write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

from .errors import InvalidArgument, excerpt


class Trust(IntEnum):
    """How far a write's origin is trusted; higher is more."""

    UNTRUSTED = 0
    MODEL = 1
    TRUSTED = 2


class Origin(StrEnum):
    """Who a write came from."""

    OPERATOR = "operator"  # the CLI, the typed API, an import or a restore
    USER = "user"  # the user's own words
    MODEL = "model"  # the model on its own
    MCP = "mcp"  # a client of ``mnemo serve``
    UNKNOWN = "unknown"  # written before mnemo recorded origins
    AGENT = "agent"  # another agent: a delegated result
    TAINTED = "tainted"  # the model, after untrusted content entered its context

    @property
    def trust(self) -> Trust:
        """This origin's trust level."""
        return _TRUST[self]


_TRUST = {
    Origin.OPERATOR: Trust.TRUSTED,
    Origin.USER: Trust.TRUSTED,
    Origin.MODEL: Trust.MODEL,
    Origin.MCP: Trust.MODEL,
    Origin.UNKNOWN: Trust.MODEL,
    Origin.AGENT: Trust.UNTRUSTED,
    Origin.TAINTED: Trust.UNTRUSTED,
}
# Every origin ranked, most trusted first: the join of several is the one ranked last.
_RANK = {origin: rank for rank, origin in enumerate(Origin)}


def parse_origin(value: Any, field_name: str = "origin") -> Origin:
    """``value`` as an :class:`Origin`, or :class:`InvalidArgument` naming ``field_name``."""
    if isinstance(value, Origin):
        return value
    try:
        return Origin(value)
    except ValueError:
        choices = ", ".join(o.value for o in Origin)
        raise InvalidArgument(field_name, f"unknown origin {excerpt(value)} (choose one of: {choices})") from None


def join(origins: Iterable[Origin]) -> Origin:
    """The origin of something derived from all of ``origins``: the least trusted (``UNKNOWN`` for none)."""
    return max(origins, key=_RANK.__getitem__, default=Origin.UNKNOWN)


@dataclass(frozen=True, slots=True)
class Provenance:
    """A write's origin and what mnemo knows of how it happened.

    ``via`` is the door or process (``tool``, ``cli``, ``api``, ``import``, ``extraction``, ``merge``,
    ``approval``...); ``source`` names the untrusted tool or source that tainted it; ``excerpt`` is the
    start of that untrusted content; ``session_id`` and ``turn`` place it in a conversation.
    """

    origin: Origin = Origin.UNKNOWN
    via: str = ""
    source: str = ""
    session_id: str = ""
    turn: int = 0
    excerpt: str = ""

    @property
    def trust(self) -> Trust:
        """The origin's trust level."""
        return self.origin.trust

    @property
    def untrusted(self) -> bool:
        """Whether a write of this provenance must wait for the user's review."""
        return self.origin.trust is Trust.UNTRUSTED

    def as_dict(self, *, excerpt: bool = True) -> dict[str, Any]:
        """A JSON-ready view, empty details left out (and the untrusted excerpt, unless ``excerpt``: views
        that can reach a model leave it out, since it may be the payload itself)."""
        data: dict[str, Any] = {"origin": self.origin.value}
        for name in ("via", "source", "session_id", "turn", "excerpt")[: None if excerpt else -1]:
            value = getattr(self, name)
            if value:
                data[name] = value
        return data

    def detail_json(self) -> str:
        """Everything but the origin, as the JSON text stored beside it."""
        detail = self.as_dict()
        del detail["origin"]
        return json.dumps(detail, ensure_ascii=False, separators=(",", ":")) if detail else ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], field_name: str = "provenance") -> Provenance:
        """The inverse of :meth:`as_dict`; a bad value raises :class:`InvalidArgument` naming its field."""
        if not isinstance(data, Mapping):
            raise InvalidArgument(field_name, f"must be an object, got {type(data).__name__}")
        origin = parse_origin(data.get("origin", Origin.UNKNOWN.value), f"{field_name}.origin")
        values: dict[str, Any] = {}
        for name in ("via", "source", "session_id", "excerpt"):
            value = data.get(name, "")
            if not isinstance(value, str):
                raise InvalidArgument(f"{field_name}.{name}", f"must be a string, got {type(value).__name__}")
            values[name] = value
        turn = data.get("turn", 0)
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise InvalidArgument(f"{field_name}.turn", "must be a non-negative integer")
        return cls(origin, turn=turn, **values)

    @classmethod
    def stored(cls, origin: str, detail: str) -> Provenance:
        """Read back what a database row holds (the origin and :meth:`detail_json`'s text)."""
        try:
            data = json.loads(detail) if detail else {}
        except ValueError:
            data = {}
        try:
            return cls.from_dict({**data, "origin": origin} if isinstance(data, dict) else {"origin": origin})
        except InvalidArgument:
            return cls(parse_origin(origin) if origin in Origin._value2member_map_ else Origin.UNKNOWN)


OPERATOR = Provenance(Origin.OPERATOR, via="api")
"""The provenance of a write the operator makes through the typed API."""


def derived(inputs: Iterable[Provenance], via: str) -> Provenance:
    """The provenance of something made from ``inputs``: their join, with the untrusted input's details."""
    items = list(inputs)
    origin = join(p.origin for p in items)
    witness = next((p for p in items if p.origin is origin), Provenance(origin))
    return Provenance(origin, via, witness.source, witness.session_id, witness.turn, witness.excerpt)
