"""Moving a memory graph in and out: readable Markdown, and JSON that imports back losslessly.

The JSON export carries everything the store keeps about a memory (id, times as exact Unix seconds,
access statistics, source, subject, scope, forgotten flag, provenance, and what maintenance keeps: pin, the importance
it was written with, when decay was last applied) and every association (with whether maintenance made
it), so :func:`import_json` can
rebuild the same graph elsewhere; importing the same document twice changes nothing the second time.
Vectors are not exported: they are derived data and are re-embedded by whichever model the importing
store is configured with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgument
from ..provenance import Provenance
from .store import MemoryGraph, RestoreCounts
from .types import (
    Association,
    Memory,
    MemoryType,
    Scope,
    iso,
    parse_memory_type,
    parse_relation,
    parse_unit_interval,
)

FORMAT = "mnemo-graph"
VERSION = 1


def export_data(graph: MemoryGraph, *, all_scopes: bool = False) -> dict[str, Any]:
    """Every memory (forgotten and superseded included) and edge of the graph's scope, as JSON data."""
    memories = graph.memories(include_forgotten=True, all_scopes=all_scopes)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": time.time(),
        "memories": [_memory_record(m) for m in memories],
        "associations": [
            {"source": a.source_id, "target": a.target_id, "relation": a.relation.value, "weight": a.weight,
             "created_at": a.created_at, "origin": a.origin}  # fmt: skip
            for a in graph.associations(all_scopes=all_scopes)
        ],
    }


def export_json(graph: MemoryGraph, *, all_scopes: bool = False) -> str:
    """:func:`export_data` as a JSON document."""
    return json.dumps(export_data(graph, all_scopes=all_scopes), ensure_ascii=False, indent=2) + "\n"


def _memory_record(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "type": memory.type.value,
        "content": memory.content,
        "importance": memory.importance,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "last_accessed_at": memory.last_accessed_at,
        "access_count": memory.access_count,
        "source": memory.source,
        "subject": memory.subject,
        "scope": memory.scope.as_dict(),
        "forgotten": memory.forgotten,
        "pinned": memory.pinned,
        "base_importance": memory.base_importance,
        "decayed_at": memory.decayed_at,
        "provenance": memory.provenance.as_dict(),
    }


def export_markdown(graph: MemoryGraph, *, all_scopes: bool = False) -> str:
    """The graph for people: one section per memory type (most important types first), newest first,
    with superseded and forgotten memories marked, then the associations."""
    memories = graph.memories(include_forgotten=True, all_scopes=all_scopes)
    by_id = {m.id: m for m in memories}
    lines = ["# Memory graph", ""]
    if not memories:
        lines += ["_No memories yet._", ""]
    for kind in MemoryType:
        group = sorted((m for m in memories if m.type is kind), key=lambda m: m.created_at, reverse=True)
        if not group:
            continue
        lines += [f"## {kind.value.capitalize()} ({len(group)})", ""]
        for memory in group:
            marks = []
            if memory.superseded_by:
                marks.append(f"superseded by {memory.superseded_by}")
            if memory.forgotten:
                marks.append("forgotten")
            note = f" — _{', '.join(marks)}_" if marks else ""
            content = memory.content.replace("\n", "\n  ")
            about = f" · about {memory.subject}" if memory.subject else ""
            lines.append(
                f"- {content}{note}  \n  `{memory.id}` · {iso(memory.created_at)} · importance {memory.importance:g}{about}"
            )
        lines.append("")
    edges = graph.associations(all_scopes=all_scopes)
    if edges:
        lines += [f"## Associations ({len(edges)})", ""]
        for edge in edges:
            source = _label(by_id.get(edge.source_id), edge.source_id)
            target = _label(by_id.get(edge.target_id), edge.target_id)
            lines.append(f"- {source} **{edge.relation.value}** {target} (weight {edge.weight:g})")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _label(memory: Memory | None, memory_id: str) -> str:
    if memory is None:
        return f"`{memory_id}`"
    text = memory.content if len(memory.content) <= 60 else memory.content[:57] + "..."
    return f"`{memory_id}` ({text.replace(chr(10), ' ')})"


def import_json(graph: MemoryGraph, document: str | bytes | Mapping[str, Any]) -> RestoreCounts:
    """Restore an :func:`export_json` document into ``graph``'s database, all or nothing.

    Every record is validated first; a problem raises :class:`InvalidArgument` naming the record and
    field, and nothing is written.
    """
    data = _decode(document)
    if data.get("format") != FORMAT:
        raise InvalidArgument("format", f"not a mnemo graph export (expected {FORMAT!r})")
    if data.get("version") != VERSION:
        raise InvalidArgument("version", f"unsupported export version {data.get('version')!r}")
    raw_memories = _list(data, "memories")
    raw_edges = _list(data, "associations")
    memories = [_parse_memory(record, f"memories[{i}]") for i, record in enumerate(raw_memories)]
    seen: set[str] = set()
    for index, memory in enumerate(memories):
        if memory.id in seen:
            raise InvalidArgument(f"memories[{index}].id", f"duplicate id {memory.id!r}")
        seen.add(memory.id)
    edges = [_parse_edge(record, f"associations[{i}]") for i, record in enumerate(raw_edges)]
    return graph.restore(memories, edges)


def _decode(document: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(document, Mapping):
        return document
    if isinstance(document, (bytes, bytearray)):
        try:
            document = bytes(document).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgument("document", f"not valid UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise InvalidArgument("document", f"not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, Mapping):
        raise InvalidArgument("document", "must be a JSON object")
    return data


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise InvalidArgument(key, "must be a list")
    return value


def _field(record: Mapping[str, Any], where: str, name: str, kinds: type | tuple[type, ...], *, optional: bool = False) -> Any:
    if name not in record or record[name] is None:
        if optional:
            return None
        raise InvalidArgument(f"{where}.{name}", "is missing")
    value = record[name]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise InvalidArgument(f"{where}.{name}", "has the wrong type (bool)")
    if not isinstance(value, kinds):
        raise InvalidArgument(f"{where}.{name}", f"has the wrong type ({type(value).__name__})")
    return value


def _parse_memory(record: Any, where: str) -> Memory:
    if not isinstance(record, Mapping):
        raise InvalidArgument(where, "must be an object")
    scope = _field(record, where, "scope", Mapping, optional=True) or {}
    scope_values = {}
    for key in ("user_id", "agent_id", "channel_id"):
        value = scope.get(key, "")
        if not isinstance(value, str):
            raise InvalidArgument(f"{where}.scope.{key}", "must be a string")
        scope_values[key] = value
    number = (int, float)
    access_count = _field(record, where, "access_count", int, optional=True) or 0
    if access_count < 0:
        raise InvalidArgument(f"{where}.access_count", "must not be negative")
    memory_id = _field(record, where, "id", str)
    if not memory_id.strip():
        raise InvalidArgument(f"{where}.id", "must not be empty")
    return Memory(
        id=memory_id,
        content=_field(record, where, "content", str),
        type=parse_memory_type(_field(record, where, "type", str), f"{where}.type"),
        importance=parse_unit_interval(_field(record, where, "importance", number), f"{where}.importance"),
        created_at=float(_field(record, where, "created_at", number)),
        updated_at=float(_field(record, where, "updated_at", number)),
        last_accessed_at=_optional_float(_field(record, where, "last_accessed_at", number, optional=True)),
        access_count=access_count,
        source=_field(record, where, "source", str, optional=True) or "",
        subject=MemoryGraph.check_subject(_field(record, where, "subject", str, optional=True) or "", f"{where}.subject"),
        scope=Scope(**scope_values),
        forgotten=bool(_field(record, where, "forgotten", bool, optional=True) or False),
        # Maintenance state, absent from exports made before maintenance existed.
        pinned=bool(_field(record, where, "pinned", bool, optional=True) or False),
        base_importance=_optional_unit(record, where, "base_importance"),
        decayed_at=_optional_float(_field(record, where, "decayed_at", number, optional=True)),
        # Absent from exports made before provenance existed: those memories' origin is unknown.
        provenance=Provenance.from_dict(
            _field(record, where, "provenance", Mapping, optional=True) or {}, f"{where}.provenance"
        ),
    )


def _optional_unit(record: Mapping[str, Any], where: str, name: str) -> float | None:
    value = _field(record, where, name, (int, float), optional=True)
    return None if value is None else parse_unit_interval(value, f"{where}.{name}")


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _parse_edge(record: Any, where: str) -> Association:
    if not isinstance(record, Mapping):
        raise InvalidArgument(where, "must be an object")
    weight = _field(record, where, "weight", (int, float), optional=True)
    source, target = _field(record, where, "source", str), _field(record, where, "target", str)
    if source == target:
        raise InvalidArgument(f"{where}.target", "must differ from source")
    return Association(
        source_id=source,
        target_id=target,
        relation=parse_relation(_field(record, where, "relation", str), f"{where}.relation"),
        weight=1.0 if weight is None else parse_unit_interval(weight, f"{where}.weight"),
        created_at=float(_field(record, where, "created_at", (int, float), optional=True) or 0.0),
        origin=_field(record, where, "origin", str, optional=True) or "",
    )
