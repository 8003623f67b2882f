"""The JSON boundary shared by every LLM-facing tool.

Inside the library, refusals are typed exceptions; here, and only here, they become
``{"success": false, "error": ...}`` objects. Arguments may arrive as a dict or, as OpenAI sends
them, as a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgument


def dumps(payload: Mapping[str, Any]) -> str:
    """Serialise a tool result; non-ASCII text stays readable for the model."""
    return json.dumps(payload, ensure_ascii=False, default=str)


def success(**fields: Any) -> str:
    """A successful tool result."""
    return dumps({"success": True, **fields})


def failure(error: str, **fields: Any) -> str:
    """A refused tool call; ``fields`` carry what the model needs to recover."""
    return dumps({"success": False, "error": error, **fields})


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """Accept tool arguments as a mapping or a JSON object string; raise :class:`InvalidArgument`."""
    if isinstance(arguments, (bytes, bytearray)):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgument("arguments", "not valid UTF-8") from exc
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise InvalidArgument("arguments", f"not valid JSON ({exc.msg})") from exc
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise InvalidArgument("arguments", f"must be a JSON object, got {type(arguments).__name__}")
    return dict(arguments)
