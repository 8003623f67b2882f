"""The memory graph's vocabulary: memory types, relations, and the records the store hands out."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .._time import iso
from ..errors import InvalidArgument, excerpt
from ..provenance import Provenance
from ..scope import Scope


class MemoryType(StrEnum):
    """What kind of knowledge a memory is; each kind has a default importance."""

    IDENTITY = "identity"
    GOAL = "goal"
    DECISION = "decision"
    TODO = "todo"
    PREFERENCE = "preference"
    FACT = "fact"
    EVENT = "event"
    OBSERVATION = "observation"

    @property
    def default_importance(self) -> float:
        """The importance a memory of this type gets when the caller gives none."""
        return DEFAULT_IMPORTANCE[self]


DEFAULT_IMPORTANCE: dict[MemoryType, float] = {
    MemoryType.IDENTITY: 1.0,
    MemoryType.GOAL: 0.9,
    MemoryType.DECISION: 0.8,
    MemoryType.TODO: 0.8,
    MemoryType.PREFERENCE: 0.7,
    MemoryType.FACT: 0.6,
    MemoryType.EVENT: 0.4,
    MemoryType.OBSERVATION: 0.3,
}


class Relation(StrEnum):
    """How one memory (the source) relates to another (the target)."""

    UPDATES = "updates"  # the source supersedes the target
    CAUSED_BY = "caused_by"
    RESULT_OF = "result_of"
    RELATED_TO = "related_to"
    PART_OF = "part_of"
    CONTRADICTS = "contradicts"

    @property
    def multiplier(self) -> float:
        """How strongly relevance flows along an edge of this kind during graph expansion."""
        return EDGE_MULTIPLIER[self]


EDGE_MULTIPLIER: dict[Relation, float] = {
    Relation.UPDATES: 1.5,
    Relation.CAUSED_BY: 1.3,
    Relation.RESULT_OF: 1.3,
    Relation.RELATED_TO: 1.0,
    Relation.PART_OF: 0.8,
    Relation.CONTRADICTS: 0.5,
}


def parse_memory_type(value: Any, field_name: str = "type") -> MemoryType:
    """``value`` as a :class:`MemoryType`, or :class:`InvalidArgument` naming ``field_name``."""
    if isinstance(value, MemoryType):
        return value
    if not isinstance(value, str):
        raise InvalidArgument(field_name, f"must be a string, got {type(value).__name__}")
    try:
        return MemoryType(value.strip().lower())
    except ValueError:
        choices = ", ".join(t.value for t in MemoryType)
        raise InvalidArgument(field_name, f"unknown memory type {excerpt(value)} (choose one of: {choices})") from None


def parse_relation(value: Any, field_name: str = "relation") -> Relation:
    """``value`` as a :class:`Relation`, or :class:`InvalidArgument` naming ``field_name``."""
    if isinstance(value, Relation):
        return value
    if not isinstance(value, str):
        raise InvalidArgument(field_name, f"must be a string, got {type(value).__name__}")
    try:
        return Relation(value.strip().lower())
    except ValueError:
        choices = ", ".join(r.value for r in Relation)
        raise InvalidArgument(field_name, f"unknown relation {excerpt(value)} (choose one of: {choices})") from None


def parse_unit_interval(value: Any, field_name: str) -> float:
    """A number in [0, 1] (importance, weight), or :class:`InvalidArgument` naming ``field_name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(field_name, f"must be a number between 0 and 1, got {type(value).__name__}")
    number = float(value)
    if not 0.0 <= number <= 1.0:  # also refuses NaN
        raise InvalidArgument(field_name, f"must be between 0 and 1, got {excerpt(value)}")
    return number


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory as stored. Times are Unix seconds (UTC).

    ``source`` groups memories written from one place (a session, a file) in write order; ``subject``
    names who the memory is about or whose words it holds (a speaker, ``"user"``), so a query that names
    them finds their memories first.
    """

    id: str
    content: str
    type: MemoryType
    importance: float
    created_at: float
    updated_at: float
    last_accessed_at: float | None = None
    access_count: int = 0
    source: str = ""
    scope: Scope = field(default_factory=Scope)
    forgotten: bool = False
    superseded_by: str | None = None
    subject: str = ""
    pinned: bool = False
    base_importance: float | None = None
    # When maintenance last applied decay (None: never); staleness after it is what the next pass decays.
    decayed_at: float | None = None
    # Who wrote it, stamped by mnemo (see :mod:`mnemo.provenance`).
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def original_importance(self) -> float:
        """The importance this memory was written with; :attr:`importance` is lower once it has decayed."""
        return self.importance if self.base_importance is None else self.base_importance

    @property
    def superseded(self) -> bool:
        """A newer memory ``updates`` this one."""
        return self.superseded_by is not None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (times as ISO strings) for tools and the CLI."""
        return {
            "id": self.id,
            "type": self.type.value,
            "content": self.content,
            "importance": self.importance,
            "base_importance": self.original_importance,
            "pinned": self.pinned,
            "created": iso(self.created_at),
            "updated": iso(self.updated_at),
            "last_accessed": iso(self.last_accessed_at),
            "access_count": self.access_count,
            "source": self.source,
            "subject": self.subject,
            "scope": self.scope.as_dict(),
            "forgotten": self.forgotten,
            "superseded_by": self.superseded_by,
            "provenance": self.provenance.as_dict(excerpt=False),
        }


@dataclass(frozen=True, slots=True)
class Association:
    """A typed, weighted edge ``source --relation--> target``; unique per (source, target, relation)."""

    source_id: str
    target_id: str
    relation: Relation
    weight: float = 1.0
    created_at: float = 0.0
    # "maintenance" for the similarity links a pass adds (recall does not follow them), else "".
    origin: str = ""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view for tools and the CLI."""
        return {
            "source": self.source_id,
            "target": self.target_id,
            "relation": self.relation.value,
            "weight": self.weight,
            "created": iso(self.created_at),
        }
