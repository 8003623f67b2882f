"""What the archive stores and returns: sessions, messages, search hits; and how an incoming
OpenAI/Anthropic-style message dict becomes a row without losing anything."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._time import iso, to_timestamp
from ..errors import InvalidArgument
from ..retrieval import has_cjk
from ..scope import Scope

# Keys with a column of their own; anything else a message carries is kept verbatim in ``extra``.
_KNOWN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "timestamp"})
ROLES = ("system", "user", "assistant", "tool")
# What was said, as opposed to instructions and tool traffic: what recall returns and neighbours count.
SPOKEN_ROLES = ("user", "assistant")
# Other names chat APIs use for the same roles: OpenAI's "developer" instructions and legacy "function"
# results. They are stored as the role they stand for (so filters by role find them), and the name a
# message came with is kept, so it reads back exactly as appended.
ROLE_ALIASES = {"developer": "system", "function": "tool"}
HIDDEN_SOURCES = frozenset({"subagent", "tool"})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _text_parts(value: Any) -> list[str]:
    """Every text fragment of a content value: a string, a list of parts, or nested parts
    (tool results that carry their own content lists)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        found: list[str] = []
        if isinstance(value.get("text"), str):
            found.append(value["text"])
        if "content" in value:
            found.extend(_text_parts(value["content"]))
        return found
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _text_parts(item)]
    return []


def _tool_text(tool_calls: Any) -> str | None:
    """The searchable part of tool calls: each function's name and arguments."""
    if not isinstance(tool_calls, (list, tuple)):
        return None
    pieces: list[str] = []
    for call in tool_calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function") if isinstance(call.get("function"), Mapping) else call
        name = function.get("name")
        arguments = function.get("arguments", function.get("input"))
        if isinstance(name, str):
            pieces.append(name)
        if isinstance(arguments, str):
            pieces.append(arguments)
        elif arguments is not None:
            pieces.append(_dumps(arguments))
    return "\n".join(pieces) or None


def tool_call_names(tool_calls: Any) -> dict[str, str]:
    """``{tool_call_id: function name}`` for the calls in an assistant message."""
    names: dict[str, str] = {}
    for call in tool_calls if isinstance(tool_calls, (list, tuple)) else ():
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            function = call.get("function") if isinstance(call.get("function"), Mapping) else call
            if isinstance(function.get("name"), str):
                names[call["id"]] = function["name"]
    return names


def _require_encodable(field_name: str, value: str | None) -> None:
    if value:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(field_name, "contains invalid Unicode (a lone surrogate)") from exc


@dataclass(frozen=True)
class MessageRow:
    """A validated message ready for ``INSERT``."""

    role: str
    content: str
    parts: str | None
    tool_name: str | None
    tool_calls: str | None
    tool_text: str | None
    tool_call_id: str | None
    extra: str | None
    created_at: float
    has_cjk: int
    tool_call_count: int


def message_row(message: Any, *, default_time: float, tool_names: Mapping[str, str] | None = None) -> MessageRow:
    """Validate one message dict and turn it into a :class:`MessageRow`; raise :class:`InvalidArgument`."""
    if not isinstance(message, Mapping):
        raise InvalidArgument("message", f"must be an object with a role, got {type(message).__name__}")
    given = message.get("role")
    if not isinstance(given, str) or not given.strip():
        raise InvalidArgument("message.role", "must be a non-empty string")
    role = ROLE_ALIASES.get(given, given)
    if role not in ROLES:
        known = ", ".join((*ROLES, *ROLE_ALIASES))
        raise InvalidArgument("message.role", f"unknown role {given!r} (expected one of {known})")
    content = message.get("content")
    if content is None:
        text, parts = "", None
    elif isinstance(content, str):
        text, parts = content, None
    elif isinstance(content, (list, tuple)):
        text, parts = "\n".join(_text_parts(content)), _dumps(list(content))
    else:
        raise InvalidArgument("message.content", f"must be a string, a list of parts or null, got {type(content).__name__}")
    tool_calls = message.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, (list, tuple)):
        raise InvalidArgument("message.tool_calls", "must be a list")
    tool_call_id = message.get("tool_call_id")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise InvalidArgument("message.tool_call_id", "must be a string")
    tool_name = message.get("tool_name")
    if tool_name is None and role == "tool" and isinstance(message.get("name"), str):
        tool_name = message["name"]
    if tool_name is None and tool_call_id and tool_names:
        tool_name = tool_names.get(tool_call_id)
    if tool_name is not None and not isinstance(tool_name, str):
        raise InvalidArgument("message.tool_name", "must be a string")
    extra = {k: v for k, v in message.items() if k not in _KNOWN_KEYS}
    if given != role:
        extra["role"] = given
    created = to_timestamp(message["timestamp"], "message.timestamp") if message.get("timestamp") is not None else default_time
    row = MessageRow(
        role=role,
        content=text,
        parts=parts,
        tool_name=tool_name,
        tool_calls=_dumps(list(tool_calls)) if tool_calls is not None else None,
        tool_text=_tool_text(tool_calls),
        tool_call_id=tool_call_id,
        extra=_dumps(extra) if extra else None,
        created_at=created,
        has_cjk=int(has_cjk(text)),
        tool_call_count=len(tool_calls) if tool_calls else 0,
    )
    return row


def require_encodable(row: MessageRow) -> None:
    """Refuse text SQLite cannot store (lone surrogates, which JSON escapes can produce)."""
    for name in ("role", "content", "parts", "tool_name", "tool_calls", "tool_call_id", "extra"):
        _require_encodable(f"message.{'content' if name == 'parts' else name}", getattr(row, name))


@dataclass(frozen=True)
class SessionInfo:
    """One archived session."""

    id: str
    source: str
    title: str | None
    model: str | None
    started_at: float
    ended_at: float | None
    parent_session_id: str | None
    message_count: int
    tool_call_count: int
    metadata: dict[str, Any] = field(default_factory=dict)
    scope: Scope = field(default_factory=Scope)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SessionInfo:
        return cls(
            id=row["id"],
            source=row["source"],
            title=row["title"],
            model=row["model"],
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            parent_session_id=row["parent_session_id"],
            message_count=row["message_count"],
            tool_call_count=row["tool_call_count"],
            metadata=json.loads(row["metadata"]) if row["metadata"] else {},
            scope=Scope(row["user_id"], row["agent_id"], row["channel_id"]),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with ISO times."""
        return {
            "id": self.id,
            "source": self.source,
            "title": self.title,
            "model": self.model,
            "started_at": iso(self.started_at),
            "ended_at": iso(self.ended_at),
            "parent_session_id": self.parent_session_id,
            "message_count": self.message_count,
            "tool_call_count": self.tool_call_count,
        }


@dataclass(frozen=True)
class StoredMessage:
    """One archived message; :meth:`to_message` gives back exactly what was appended."""

    id: int
    session_id: str
    role: str
    text: str
    parts: list[Any] | None
    tool_name: str | None
    tool_calls: list[Any] | None
    tool_call_id: str | None
    extra: dict[str, Any]
    created_at: float

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredMessage:
        return cls(
            id=row["id"],
            session_id=row["session_id"],
            role=row["role"],
            text=row["content"],
            parts=json.loads(row["parts"]) if row["parts"] else None,
            tool_name=row["tool_name"],
            tool_calls=json.loads(row["tool_calls"]) if row["tool_calls"] else None,
            tool_call_id=row["tool_call_id"],
            extra=json.loads(row["extra"]) if row["extra"] else {},
            created_at=row["created_at"],
        )

    @property
    def content(self) -> str | list[Any]:
        """The original content: the list of parts for multipart messages, else the text."""
        return self.parts if self.parts is not None else self.text

    def to_message(self) -> dict[str, Any]:
        """The message as an OpenAI-style dict, as it was appended (a ``timestamp`` key, if it had one,
        is not repeated: it became :attr:`created_at`)."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls is not None:
            message["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        message.update(self.extra)
        return message

    def to_dict(self, *, max_chars: int | None = None) -> dict[str, Any]:
        """JSON-ready summary for tools and the CLI; ``text`` cut at ``max_chars`` with a marker."""
        text = self.text
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + f"… [{len(self.text) - max_chars} more chars]"
        data: dict[str, Any] = {"id": self.id, "session_id": self.session_id, "role": self.role, "content": text}
        if self.tool_name:
            data["tool_name"] = self.tool_name
        if self.tool_calls:
            data["tool_calls"] = [
                {"name": name, "arguments": args}
                for name, args in (_call_summary(call) for call in self.tool_calls)
            ]
        data["time"] = iso(self.created_at)
        return data


def _call_summary(call: Any) -> tuple[Any, Any]:
    if not isinstance(call, Mapping):
        return None, call
    function = call.get("function") if isinstance(call.get("function"), Mapping) else call
    return function.get("name"), function.get("arguments", function.get("input"))


@dataclass(frozen=True)
class Hit:
    """One matching message with its session, a highlighted snippet and its neighbours. ``similarity`` is the
    cosine of the message's embedding and the query's, where the vector channel found the message."""

    message: StoredMessage
    session: SessionInfo
    snippet: str
    score: float
    before: tuple[StoredMessage, ...] = ()
    after: tuple[StoredMessage, ...] = ()
    similarity: float | None = None

    def to_dict(self, *, max_chars: int | None = 600) -> dict[str, Any]:
        return {
            "message_id": self.message.id,
            "session_id": self.session.id,
            "role": self.message.role,
            "time": iso(self.message.created_at),
            "snippet": self.snippet,
            "context": [m.to_dict(max_chars=max_chars) for m in (*self.before, self.message, *self.after)],
        }


@dataclass(frozen=True)
class SessionHits:
    """The hits of one lineage (a session and the sessions split or branched from it)."""

    root: SessionInfo
    hits: tuple[Hit, ...]

    def to_dict(self, *, max_chars: int | None = 600) -> dict[str, Any]:
        return {
            "session": self.root.to_dict(),
            "hits": [hit.to_dict(max_chars=max_chars) for hit in self.hits],
        }
