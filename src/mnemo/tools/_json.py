"""The JSON boundary shared by every LLM-facing tool.

Inside the library, refusals are typed exceptions; here, and only here, they become
``{"success": false, "error": ...}`` objects. Arguments may arrive as a dict or, as OpenAI sends
them, as a JSON string. :func:`parse_arguments` is the one gate every tool's arguments pass: it
refuses, naming the field, what no handler should have to think about: JSON nested deeper than any
tool needs (before parsing, so no recursion limit is ever reached), text no store can hold (NUL, lone
surrogates), and fields the tool's schema does not declare.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, check_text, excerpt

if TYPE_CHECKING:
    from ..degraded import Degradation

MAX_ARGUMENT_DEPTH = 16
"""Deepest nesting of objects and arrays accepted in tool arguments (the tools need at most 4)."""

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


def dumps(payload: Mapping[str, Any]) -> str:
    """Serialise a tool result; non-ASCII text stays readable for the model."""
    return json.dumps(payload, ensure_ascii=False, default=str)


def function_schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool's schema in OpenAI function format, refusing arguments it does not name."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        },
    }


def check_required(args: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Refuse ``args`` missing (or null in) a field ``schema`` requires, naming it."""
    for name in parameters_of(schema)["required"]:
        if args.get(name) is None:
            raise InvalidArgument(name, "is required")


def success(**fields: Any) -> str:
    """A successful tool result."""
    return dumps({"success": True, **fields})


def failure(error: str, **fields: Any) -> str:
    """A refused tool call; ``fields`` carry what the model needs to recover."""
    return dumps({"success": False, "error": error, **fields})


def refusal(exc: InvalidArgument) -> str:
    """The result for an invalid argument: the field and what is wrong with it."""
    return failure(f"invalid argument {exc.field}: {exc.problem}", field=exc.field)


def _json_depth(text: str) -> int:
    """How deeply the objects and arrays in JSON ``text`` nest, without parsing it (brackets inside
    strings do not count). Linear, and at C speed except for one step per bracket."""
    if text.count("[") + text.count("{") <= MAX_ARGUMENT_DEPTH:
        return 0
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(1 if char in "[{" else -1 for char in brackets), default=0)


def _path(parent: str, key: str | int) -> str:
    """``parent.key`` or ``parent[index]``; an overlong key is shown as an excerpt."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    name = key if len(key) <= 64 else excerpt(key)
    return f"{parent}.{name}" if parent else name


def _check_values(arguments: Mapping[str, Any]) -> None:
    """Every key and string in ``arguments``: storable text; containers at most MAX_ARGUMENT_DEPTH deep."""
    pending: list[tuple[str, Any, int]] = [("", arguments, 1)]
    while pending:
        path, value, depth = pending.pop()
        if isinstance(value, str):
            check_text(path or "arguments", value)
        elif isinstance(value, (Mapping, list, tuple)):
            if depth > MAX_ARGUMENT_DEPTH:
                raise InvalidArgument(path or "arguments", f"nests deeper than {MAX_ARGUMENT_DEPTH} levels")
            if isinstance(value, Mapping):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise InvalidArgument(path or "arguments", f"has a non-text key {excerpt(key)}")
                    check_text(_path(path, key), key)
                    pending.append((_path(path, key), item, depth + 1))
            else:
                pending.extend((_path(path, index), item, depth + 1) for index, item in enumerate(value))


def _check_fields(value: Any, schema: Mapping[str, Any], path: str = "") -> None:
    """Refuse any field ``schema`` does not declare, in objects at any depth the schema describes."""
    properties = schema.get("properties")
    if isinstance(value, Mapping) and isinstance(properties, Mapping):
        for key, item in value.items():
            if key not in properties:
                raise InvalidArgument(_path(path, key), f"unknown field (allowed: {', '.join(properties)})")
            _check_fields(item, properties[key], _path(path, key))
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        for index, item in enumerate(value):
            _check_fields(item, items, _path(path, index))


def parameters_of(tool_schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON schema of a tool's arguments, from its OpenAI function schema."""
    return tool_schema["function"]["parameters"]


def parse_arguments(arguments: Any, tool_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Accept tool arguments as a mapping or a JSON object string; raise :class:`InvalidArgument`.

    An empty string means no arguments (``{}``); ``None`` and the JSON ``null`` are refused like any other
    value that is not an object, so a tool whose fields are all optional does not read them as "no
    arguments" and run. With ``tool_schema`` (the tool's OpenAI function schema) every field must be one it
    declares, so new arguments added to a schema are accepted without touching this rule.
    """
    if isinstance(arguments, (bytes, bytearray)):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgument("arguments", "not valid UTF-8") from exc
    if isinstance(arguments, str):
        if _json_depth(arguments) > MAX_ARGUMENT_DEPTH:
            raise InvalidArgument("arguments", f"nests deeper than {MAX_ARGUMENT_DEPTH} levels")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidArgument("arguments", f"not valid JSON ({exc.msg} at position {exc.pos})") from exc
        except ValueError as exc:  # an integer too long to convert (Python's digit limit)
            raise InvalidArgument("arguments", f"holds a number Python refuses to read ({excerpt(str(exc))})") from exc
    if not isinstance(arguments, Mapping):
        got = "null" if arguments is None else type(arguments).__name__
        raise InvalidArgument("arguments", f"must be a JSON object, got {got}")
    _check_values(arguments)
    if tool_schema is not None:
        _check_fields(arguments, parameters_of(tool_schema))
    return dict(arguments)


def unavailable_result(tool: str, degradation: Degradation) -> str:
    """The answer to a call of ``tool`` whose component is down: the reason, as a tool result."""
    return failure(
        f"tool {tool!r} is unavailable this session: {degradation.component} could not start "
        f"({degradation.reason}); tell the user (`mnemo doctor` shows how to repair it)",
        unavailable=degradation.component,
    )
