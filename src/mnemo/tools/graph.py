"""The memory graph's tools: ``recall``, ``remember``, ``relate`` and ``forget``.

Arguments are validated here before the graph is touched, so a malformed call changes nothing and the
error names the field to fix; refusals from the graph (unknown ids, blocked content) become
``{"success": false, ...}`` with what the model needs to recover.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from ..deep_recall import TIMEOUT as DEEP_TIMEOUT
from ..errors import InvalidArgument, MnemoError, excerpt
from ..graph.errors import BlockedContent
from ..graph.recalled import DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT
from ..graph.review import ReviewItem, WriteKind
from ..graph.store import MemoryGraph
from ..graph.types import MemoryType, Relation
from ..provenance import Origin
from ..recollection import recall_everything
from ..review import HELD_MESSAGE, MODEL_WRITES, WriteGate, graph_payload
from ..safety.scan import finding_labels
from ._json import check_required, failure, function_schema, parse_arguments, success

if TYPE_CHECKING:
    from ..archive import Archive

_TYPES = [t.value for t in MemoryType]
_RELATIONS = [r.value for r in Relation]
_RELATION_HELP = (
    "updates: the new memory supersedes the target; caused_by / result_of: causality; related_to: same topic; "
    "part_of: a piece of a larger memory; contradicts: disagrees with the target."
)


_schema = function_schema

_DEEP_DESCRIPTION = (
    "Reorder the best results by reading each together with the query (slower; puts the one that answers "
    "first more often)."
)

RECALL_TOOL_SCHEMA = _schema(
    "recall",
    "Search your long-term memory for what is relevant to a question or topic: memories (the newest version "
    "of each, with its id, type, date and content) and passages of earlier conversations (kind 'message', "
    "with the session they were said in). Use it before answering questions about the user, past decisions "
    "or earlier work that are not in the conversation.",
    {
        "query": {"type": "string", "description": "What you want to remember, in plain words."},
        "types": {"type": "array", "items": {"type": "string", "enum": _TYPES}, "description": "Only these memory types."},
        "since": {"type": "string", "description": "Only memories created at or after this ISO 8601 date."},
        "until": {"type": "string", "description": "Only memories created at or before this ISO 8601 date."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL_LIMIT, "description": "At most this many results (default 8)."},
        "include_history": {"type": "boolean", "description": "Also return superseded older versions."},
        "deep": {"type": "boolean", "description": _DEEP_DESCRIPTION},
    },
    ["query"],
)

REMEMBER_TOOL_SCHEMA = _schema(
    "remember",
    "Save a durable memory to your long-term memory graph (unbounded, recalled when relevant). One fact, "
    "decision, preference, goal or event per memory, stated so it makes sense on its own. To correct an "
    "existing memory, remember the new version with an 'updates' relation to the old id. Never store secrets.",
    {
        "content": {"type": "string", "description": "The memory, self-contained."},
        "type": {"type": "string", "enum": _TYPES, "description": "What kind of memory this is (default fact)."},
        "importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "0..1; defaults by type."},
        "subject": {
            "type": "string",
            "description": "Who the memory is about: 'user', or a person's name as it appears in conversation. "
            "Recall ranks memories about someone a question names first.",
        },
        "pin": {
            "type": "boolean",
            "description": "Pin it: a pinned memory never fades or is pruned and always appears in the memory "
            "bulletin. Only for what must never be lost (default false).",
        },
        "relations": {
            "type": "array",
            "description": "Edges from this new memory to existing memory ids. " + _RELATION_HELP,
            "items": {
                "type": "object",
                "properties": {
                    "target": {"type": "string", "description": "An existing memory id."},
                    "relation": {"type": "string", "enum": _RELATIONS},
                    "weight": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["target", "relation"],
                "additionalProperties": False,
            },
        },
    },
    ["content"],
)

RELATE_TOOL_SCHEMA = _schema(
    "relate",
    "Connect two existing memories with a typed edge (source --relation--> target), or change its weight. "
    + _RELATION_HELP,
    {
        "source": {"type": "string", "description": "Memory id the edge starts from."},
        "target": {"type": "string", "description": "Memory id the edge points to."},
        "relation": {"type": "string", "enum": _RELATIONS},
        "weight": {"type": "number", "minimum": 0, "maximum": 1, "description": "Strength 0..1 (default 1)."},
    },
    ["source", "target", "relation"],
)

FORGET_TOOL_SCHEMA = _schema(
    "forget",
    "Stop recalling a memory that is wrong or no longer useful. It is kept in history, not deleted.",
    {"id": {"type": "string", "description": "The memory id to forget."}},
    ["id"],
)

GRAPH_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    RECALL_TOOL_SCHEMA,
    REMEMBER_TOOL_SCHEMA,
    RELATE_TOOL_SCHEMA,
    FORGET_TOOL_SCHEMA,
)
GRAPH_TOOL_NAMES: frozenset[str] = frozenset(s["function"]["name"] for s in GRAPH_TOOL_SCHEMAS)


_check_required = check_required


def _optional_string(args: Mapping[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidArgument(name, f"must be a string, got {type(value).__name__}")
    return value


class _Sessions(NamedTuple):
    """The archive ``recall`` also searches, and what of it the model still holds (see
    :func:`~mnemo.recollection.recall_everything`)."""

    archive: Archive | None = None
    in_context: tuple[str, int] | None = None
    deep_timeout: float = DEEP_TIMEOUT


_NO_SESSIONS = _Sessions()


def _recall(graph: MemoryGraph, args: dict[str, Any], gate: WriteGate, sessions: _Sessions = _NO_SESSIONS) -> str:
    _check_required(args, RECALL_TOOL_SCHEMA)
    found = recall_everything(
        graph,
        sessions.archive,
        args["query"],
        in_context=sessions.in_context,
        limit=args.get("limit", DEFAULT_RECALL_LIMIT),
        types=args.get("types"),
        since=_optional_string(args, "since"),
        until=_optional_string(args, "until"),
        include_history=args.get("include_history", False),
        deep=args.get("deep", False),
        deep_timeout=sessions.deep_timeout,
    )
    message = f"{len(found)} found." if found else "Nothing matching found."
    return success(count=len(found), results=[item.as_tool_dict() for item in found], message=message)


def held_result(item: ReviewItem) -> str:
    """What the model is told of a write held for review: one line, never the payload."""
    return success(status="awaiting_review", review_id=item.id, message=HELD_MESSAGE)


def _remember(graph: MemoryGraph, args: dict[str, Any], gate: WriteGate) -> str:
    _check_required(args, REMEMBER_TOOL_SCHEMA)
    text = graph._unscanned(args["content"], "content")
    provenance = gate.provenance(text, "tool")
    subject = _optional_string(args, "subject") or ""
    kind = args.get("type", MemoryType.FACT.value)
    payload = graph_payload(text, kind, importance=args.get("importance"), subject=subject, source="")
    if gate.holds(provenance):
        graph._check_item(text, kind, args.get("importance"), "", subject, (), "")  # a bad write is refused, not held
        return held_result(gate.queue(graph).submit(WriteKind.GRAPH, payload, provenance))
    relations = args.get("relations") or []
    if not isinstance(relations, list):
        raise InvalidArgument("relations", f"must be a list, got {type(relations).__name__}")
    links = []
    for index, item in enumerate(relations):
        if not isinstance(item, Mapping):
            raise InvalidArgument(f"relations[{index}]", "must be an object with target and relation")
        for name in ("target", "relation"):
            if item.get(name) is None:
                raise InvalidArgument(f"relations[{index}].{name}", "is required")
        links.append((item["target"], item["relation"], item.get("weight", 1.0)))
    try:
        memory = graph.remember(
            text, kind, importance=args.get("importance"), subject=subject, relations=links,
            pin=args.get("pin", False), provenance=provenance,
        )  # fmt: skip
    except BlockedContent as exc:
        if provenance.origin is not Origin.USER:
            raise
        # The user's own words, flagged all the same: the user decides, not the scan.
        return held_result(gate.queue(graph).submit(WriteKind.GRAPH, payload, provenance, finding_labels(exc.findings)))
    edges = [a.as_dict() for a in graph.associations(memory.id)]
    return success(
        id=memory.id, type=memory.type.value, importance=memory.importance, subject=memory.subject, pinned=memory.pinned,
        relations=edges, message="Memory saved.",
    )  # fmt: skip


def _relate(graph: MemoryGraph, args: dict[str, Any], gate: WriteGate) -> str:
    _check_required(args, RELATE_TOOL_SCHEMA)
    edge = graph.relate(args["source"], args["target"], args["relation"], args.get("weight", 1.0))
    return success(association=edge.as_dict(), message=f"Linked {edge.source_id} {edge.relation.value} {edge.target_id}.")


def _forget(graph: MemoryGraph, args: dict[str, Any], gate: WriteGate) -> str:
    _check_required(args, FORGET_TOOL_SCHEMA)
    memory = graph.forget(args["id"])
    return success(id=memory.id, message="Memory forgotten: kept in history, no longer recalled.")


_SCHEMAS = {schema["function"]["name"]: schema for schema in GRAPH_TOOL_SCHEMAS}
_HANDLERS: dict[str, Callable[[MemoryGraph, dict[str, Any], WriteGate], str]] = {
    "recall": _recall,
    "remember": _remember,
    "relate": _relate,
    "forget": _forget,
}

# The graph's own field names differ from the tools' in a few places; errors speak the tools' language.
_FIELD_NAMES = {"source_id": "source", "target_id": "target", "memory_type": "type"}


def handle_graph_call(
    graph: MemoryGraph,
    name: str,
    arguments: Any,
    *,
    archive: Archive | None = None,
    in_context: tuple[str, int] | None = None,
    gate: WriteGate = MODEL_WRITES,
    deep_timeout: float = DEEP_TIMEOUT,
) -> str:
    """Run the graph tool ``name`` against ``graph``; return the JSON result for the model. ``recall`` also
    searches ``archive``'s earlier sessions, leaving out ``in_context`` (``(session_id, message_id)``: that
    session's messages after that id). ``gate`` stamps what ``remember`` writes and holds an untrusted write
    for review (see :mod:`mnemo.review`). ``deep_timeout`` bounds ``recall``'s deep flag, in seconds."""
    sessions = _Sessions(archive, in_context, deep_timeout)
    handler = partial(_recall, sessions=sessions) if name == "recall" else _HANDLERS.get(name)
    if handler is None:
        return failure(f"unknown graph tool {excerpt(name)} (tools: {', '.join(_HANDLERS)})")
    try:
        return handler(graph, parse_arguments(arguments, _SCHEMAS[name]), gate)
    except InvalidArgument as exc:
        field = _FIELD_NAMES.get(exc.field, exc.field)
        return failure(f"invalid argument {field}: {exc.problem}", field=field)
    except BlockedContent as exc:
        return failure(f"{exc}; nothing was saved", field=exc.field, findings=finding_labels(exc.findings))
    except MnemoError as exc:
        return failure(str(exc))
