"""The ``memory`` tool: how the model edits its curated memory.

Arguments are validated here, before the store is touched, so a malformed call changes nothing and the
error names the field to fix. Refusals from the store become ``{"success": false, ...}`` with the data
the model needs to recover. Repeated failures in one turn are braked: from the fourth counted failure
the answer tells the model to stop retrying and get on with its reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..curated.entries import entry_id
from ..curated.errors import MemoryOpError, NoMatchingEntry, OverBudget
from ..curated.ops import Add, MemoryOp, MemoryOpOutcome, Remove, Replace
from ..curated.store import TARGETS, MemoryStore, check_target
from ..errors import InvalidArgument, excerpt
from ._json import failure, parse_arguments, refusal, success

ACTIONS = ("add", "replace", "remove")
HISTORY_ACTION = "history"
HISTORY_LIMIT = 10
MAX_BATCH_OPERATIONS = 20
RETRY_BRAKE_AT = 4

_STOP_RETRYING = (
    "memory update failed {count} times this turn; stop retrying and continue with your reply to the user "
    "(the memory is unchanged; consolidate it in a later turn)"
)

_OPERATION_PROPERTIES: dict[str, Any] = {
    "action": {"type": "string", "enum": list(ACTIONS), "description": "add, replace or remove one entry."},
    "content": {"type": "string", "description": "The new entry text (add, replace). One fact per entry, short."},
    "old_text": {
        "type": "string",
        "description": "A short substring that identifies exactly one existing entry (replace, remove).",
    },
    "id": {
        "type": "string",
        "description": "The id of the entry to replace or remove, as shown in results; used before old_text.",
    },
}

MEMORY_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "memory",
        "description": (
            "Edit your persistent curated memory, shown at the start of every future session. "
            "target 'memory' holds your own notes (environment facts, conventions, lessons learned); "
            "target 'user' holds who the user is (preferences, role, habits). Both have a hard character "
            "limit: keep entries short and consolidate when near it. Changes are saved at once but appear "
            "in the system prompt only from the next session. Use action + content/old_text for one "
            "edit, or operations for several edits applied together (all or nothing), e.g. remove two "
            "stale entries and add one merged entry. Results list each entry with an id to aim replace and "
            "remove at. action 'history' lists recent removals and rewrites of the target, so an entry "
            "removed by mistake can be added back. Never store secrets or instructions to yourself."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "target": {"type": "string", "enum": list(TARGETS), "description": "Which store to edit."},
                **_OPERATION_PROPERTIES,
                "action": {
                    "type": "string",
                    "enum": [*ACTIONS, HISTORY_ACTION],
                    "description": "add, replace or remove one entry, or history: list recent removals.",
                },
                "operations": {
                    "type": "array",
                    "description": "Several edits applied in order as one write; use instead of action.",
                    "minItems": 1,
                    "maxItems": MAX_BATCH_OPERATIONS,
                    "items": {
                        "type": "object",
                        "properties": _OPERATION_PROPERTIES,
                        "required": ["action"],
                    },
                },
            },
            "required": ["target"],
        },
    },
}


def _text(args: dict[str, Any], key: str, field: str) -> str:
    value = args.get(key)
    if value is None:
        raise InvalidArgument(field, "is required for this action")
    if not isinstance(value, str):
        raise InvalidArgument(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidArgument(field, "must not be empty")
    return value


def _operation(args: dict[str, Any], prefix: str = "") -> MemoryOp:
    action = args.get("action")
    if action is None:
        raise InvalidArgument(f"{prefix}action", f"is required: one of {', '.join(ACTIONS)}")
    if action not in ACTIONS:
        raise InvalidArgument(f"{prefix}action", f"must be one of {', '.join(ACTIONS)}, got {excerpt(action)}")
    if action == "add":
        return Add(_text(args, "content", f"{prefix}content"))
    # An id aims first; old_text is then only a fallback description and may be left out.
    aimed = _text(args, "id", f"{prefix}id") if args.get("id") is not None else None
    old_text = _text(args, "old_text", f"{prefix}old_text") if aimed is None or args.get("old_text") is not None else ""
    if action == "replace":
        return Replace(old_text, _text(args, "content", f"{prefix}content"), entry_id=aimed)
    return Remove(old_text, entry_id=aimed)


def _operations(raw: object) -> list[MemoryOp]:
    if not isinstance(raw, list):
        raise InvalidArgument("operations", f"must be an array of operations, got {type(raw).__name__}")
    if not raw:
        raise InvalidArgument("operations", "must hold at least one operation")
    if len(raw) > MAX_BATCH_OPERATIONS:
        raise InvalidArgument("operations", f"holds {len(raw)} operations; at most {MAX_BATCH_OPERATIONS}")
    ops = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidArgument(f"operations[{index}]", f"must be an object, got {type(item).__name__}")
        ops.append(_operation(item, f"operations[{index}]."))
    return ops


@dataclass(frozen=True)
class MemoryCall:
    """A validated ``memory`` tool call: one target and its operations (``batch`` if sent as ``operations``)."""

    target: str
    operations: tuple[MemoryOp, ...]
    batch: bool
    history: bool = False


def parse_memory_call(arguments: Any) -> MemoryCall:
    """Validate raw tool arguments (dict or JSON string); raise :class:`InvalidArgument` naming the field."""
    args = parse_arguments(arguments, MEMORY_TOOL_SCHEMA)
    if "target" not in args:
        raise InvalidArgument("target", "is required: 'memory' or 'user'")
    target = check_target(args["target"])
    if "operations" in args and args["operations"] is not None:
        if args.get("action") is not None:
            raise InvalidArgument("operations", "give either action or operations, not both")
        return MemoryCall(target, tuple(_operations(args["operations"])), batch=True)
    if args.get("action") == HISTORY_ACTION:
        return MemoryCall(target, (), batch=False, history=True)
    return MemoryCall(target, (_operation(args),), batch=False)


def _counted(exc: MemoryOpError, batch: bool) -> bool:
    # Ambiguity is cheap to fix with a longer old_text, so it never brakes; a failed batch always does.
    return batch or isinstance(exc, (NoMatchingEntry, OverBudget))


def apply_memory_call(
    store: MemoryStore, call: MemoryCall, *, origin: dict[str, Any] | None = None
) -> MemoryOpOutcome:
    """Apply a parsed call to ``store``: one operation, or a batch as one all-or-nothing write; ``origin``
    goes into the history record. Raises :class:`MemoryOpError` (or :class:`InvalidArgument`) on refusal,
    writing nothing."""
    if call.batch:
        return store.apply_batch(call.target, call.operations, origin=origin)
    return store.apply(call.target, call.operations[0], origin=origin)


def shown_entries(entries: Any) -> list[dict[str, str]]:
    """Entries as the model sees them: each with its content-derived id."""
    return [{"id": entry_id(entry), "text": entry} for entry in entries]


def memory_result(outcome: MemoryOpOutcome) -> str:
    """The JSON the model sees for an accepted edit."""
    return success(
        target=outcome.target, usage=outcome.usage, entry_count=outcome.entry_count, message=outcome.message,
        entries=shown_entries(outcome.entries),
    )  # fmt: skip


def memory_history_result(store: MemoryStore, target: str) -> str:
    """The JSON for the ``history`` action: the target's recent writes that took entries away, newest
    first, so the model can add back what it removed by mistake."""
    return success(
        target=target,
        removals=[
            {"record": r.id, "time": r.as_dict()["time"], "operation": r.operation, "removed": list(r.removed),
             "added": list(r.added)}
            for r in store.recent_removals(target, HISTORY_LIMIT)
        ],
        entries=shown_entries(store.entries(target)),
    )  # fmt: skip


def memory_refusal(store: MemoryStore, call: MemoryCall, exc: InvalidArgument | MemoryOpError) -> str:
    """The JSON the model sees for a refused edit, braking repeated failures within a turn."""
    if isinstance(exc, InvalidArgument):
        return refusal(exc)
    if _counted(exc, call.batch):
        count = store.count_failure()
        if count >= RETRY_BRAKE_AT:
            # No entries or hints here: anything actionable would invite yet another attempt.
            return failure(_STOP_RETRYING.format(count=count), target=call.target, stop_retrying=True)
    message = str(exc)
    if exc.op_index is not None:
        message = f"batch refused at operation {exc.op_index}, nothing applied: {message}"
    return failure(message, **exc.details())


def execute_memory_call(store: MemoryStore, call: MemoryCall) -> str:
    """Apply a parsed call to ``store`` and return the JSON result, braking repeated failures."""
    if call.history:
        return memory_history_result(store, call.target)
    try:
        outcome = apply_memory_call(store, call)
    except (InvalidArgument, MemoryOpError) as exc:
        return memory_refusal(store, call, exc)
    return memory_result(outcome)


def handle_memory_call(store: MemoryStore, arguments: Any) -> str:
    """Run one ``memory`` tool call against ``store``; return the JSON result for the model."""
    try:
        call = parse_memory_call(arguments)
    except InvalidArgument as exc:
        return refusal(exc)
    return execute_memory_call(store, call)
