"""The ``session_search`` tool: the agent's window onto every past conversation.

Four actions: ``discover`` (query -> ranked sessions, each with highlighted snippets and the messages
around every match), ``read`` (one session; a long one as head + tail with a hint on how to see the
middle), ``scroll`` (a window around a message id) and ``browse`` (no query -> recent sessions).
Arguments are validated here; every refusal names the argument at fault.
"""

from __future__ import annotations

from typing import Any

from ..archive.base import Archive, SessionNotFound
from ..archive.records import ROLES, SessionHits
from ..archive.summary import summarize_hits
from ..errors import InvalidArgument, MnemoError, excerpt
from ..llm import LLM, LLMError
from ._json import failure, parse_arguments, refusal, success

ACTIONS = ("discover", "read", "scroll", "browse")
SORTS = ("relevance", "newest", "oldest")
READ_HEAD = 12
READ_TAIL = 12
MAX_MESSAGE_CHARS = 1500

SESSION_SEARCH_TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "session_search",
        "description": (
            "Search and read past conversations (every message of every earlier session is archived). "
            "Use it when the user refers to something discussed before, or you need a detail from a past session. "
            "action=discover with a query finds the most relevant sessions (keywords or a plain question; "
            "\"quoted phrases\", prefix* and AND/OR/NOT work) and shows each match with its neighbouring messages. "
            "action=read shows one session (long ones as beginning + end). action=scroll shows the messages around "
            "a message_id. action=browse lists recent sessions. The current conversation is excluded."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS),
                           "description": "discover (default with a query), read, scroll, or browse (default without)"},
                "query": {"type": "string", "description": "what to look for (discover)"},
                "session_id": {"type": "string", "description": "the session to read"},
                "message_id": {"type": "integer", "description": "the message to scroll around"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20,
                          "description": "how many sessions to return (default 5; browse default 10)"},
                "role": {"type": "string", "enum": list(ROLES), "description": "only messages with this role"},
                "source": {"type": "string", "description": "only sessions from this source (cli, gateway, cron, subagent...)"},
                "since": {"type": "string", "description": "ISO date/time: only messages at or after it"},
                "until": {"type": "string", "description": "ISO date/time: only messages before it"},
                "sort": {"type": "string", "enum": list(SORTS), "description": "relevance (default), newest or oldest"},
                "window": {"type": "integer", "minimum": 0, "maximum": 20,
                           "description": "neighbouring messages shown on each side of a match (discover: 1, scroll: 5)"},
            },
            "required": [],
        },
    },
}


def _integer(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(name, f"must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise InvalidArgument(name, f"must be from {low} to {high}, got {value}")
    return value


def _text(args: dict[str, Any], name: str, *, choices: tuple[str, ...] | None = None) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(name, f"must be a string, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return None
    if choices is not None and value not in choices:
        raise InvalidArgument(name, f"must be one of {', '.join(choices)}, got {excerpt(value)}")
    return value


def _when(args: dict[str, Any], name: str) -> Any:
    # The model sends ISO text; code may pass a datetime or Unix seconds, which the archive checks.
    value = args.get(name)
    return _text(args, name) if value is None or isinstance(value, str) else value


def discover(
    archive: Archive,
    query: Any,
    *,
    current_session_id: str | None = None,
    limit: Any = None,
    role: Any = None,
    source: Any = None,
    since: Any = None,
    until: Any = None,
    sort: Any = None,
    window: Any = None,
) -> list[SessionHits]:
    """The ``discover`` action as a call, shared by the tool and :meth:`mnemo.AgentMemory.search_sessions`:
    the arguments are checked as the tool's (``limit`` 1-20, default 5; ``window`` 0-20, default 1), then
    ``archive`` is searched leaving out ``current_session_id`` and its lineage."""
    args = {"query": query, "limit": limit, "role": role, "source": source, "since": since, "until": until,
            "sort": sort, "window": window}  # fmt: skip
    text = _text(args, "query")
    if text is None:
        raise InvalidArgument("query", "is required for action 'discover' (use action 'browse' to list sessions)")
    return archive.search(
        text,
        limit=_integer(args, "limit", 5, 1, 20),
        role=_text(args, "role", choices=ROLES),
        source=_text(args, "source"),
        since=_when(args, "since"),
        until=_when(args, "until"),
        sort=_text(args, "sort", choices=SORTS) or "relevance",
        context=_integer(args, "window", 1, 0, 20),
        exclude_session=current_session_id,
    )


def _discover(archive: Archive, args: dict[str, Any], current: str | None, summarizer: LLM | None) -> str:
    query = _text(args, "query")
    groups = discover(
        archive, query, current_session_id=current,
        **{name: args.get(name) for name in ("limit", "role", "source", "since", "until", "sort", "window")},
    )  # fmt: skip
    sessions = [group.to_dict(max_chars=MAX_MESSAGE_CHARS) for group in groups]
    fields: dict[str, Any] = {"query": query, "count": len(sessions), "sessions": sessions}
    if not sessions:
        fields["hint"] = "No past messages matched. Try fewer or different words, or action 'browse'."
    elif summarizer is not None:
        try:
            fields["summary"] = summarize_hits(summarizer, query, groups)
        except LLMError as exc:
            fields["summary_error"] = f"no summary ({exc}); the matching messages are above"
    return success(**fields)


def _read(archive: Archive, args: dict[str, Any]) -> str:
    session_id = _text(args, "session_id")
    if session_id is None:
        raise InvalidArgument("session_id", "is required for action 'read'")
    info = archive.get_session(session_id)
    if info is None:
        raise InvalidArgument("session_id", f"no session with id {excerpt(session_id)}")
    head = archive.messages(session_id, limit=READ_HEAD + READ_TAIL + 1)
    fields: dict[str, Any] = {"session": info.to_dict()}
    if len(head) <= READ_HEAD + READ_TAIL:
        fields["messages"] = [m.to_dict(max_chars=MAX_MESSAGE_CHARS) for m in head]
        return success(**fields)
    head = head[:READ_HEAD]
    tail = archive.messages(session_id, limit=READ_TAIL, newest_first=True)
    omitted = info.message_count - len(head) - len(tail)
    fields["head"] = [m.to_dict(max_chars=MAX_MESSAGE_CHARS) for m in head]
    fields["tail"] = [m.to_dict(max_chars=MAX_MESSAGE_CHARS) for m in tail]
    fields["omitted"] = omitted
    fields["hint"] = (
        f"{omitted} messages between id {head[-1].id} and id {tail[0].id} are not shown; "
        f"use action 'scroll' with a message_id to read them, or 'discover' with a query and this topic."
    )
    return success(**fields)


def _scroll(archive: Archive, args: dict[str, Any]) -> str:
    message_id = args.get("message_id")
    if isinstance(message_id, bool) or not isinstance(message_id, int):
        raise InvalidArgument("message_id", "is required for action 'scroll' and must be an integer")
    window = _integer(args, "window", 5, 0, 20)
    messages = archive.window(message_id, before=window, after=window)
    if not messages:
        raise InvalidArgument("message_id", f"no message with id {message_id}")
    return success(
        session_id=messages[0].session_id,
        message_id=message_id,
        messages=[m.to_dict(max_chars=MAX_MESSAGE_CHARS) for m in messages],
    )


def _browse(archive: Archive, args: dict[str, Any], current: str | None) -> str:
    sessions = archive.list_sessions(
        limit=_integer(args, "limit", 10, 1, 20),
        source=_text(args, "source"),
        since=_text(args, "since"),
        until=_text(args, "until"),
        order="oldest" if _text(args, "sort", choices=SORTS) == "oldest" else "newest",
        exclude=archive.lineage(current) if current else (),
    )
    return success(count=len(sessions), sessions=[s.to_dict() for s in sessions])


def handle_session_search(
    archive: Archive, arguments: Any, *, current_session_id: str | None = None, summarizer: LLM | None = None
) -> str:
    """Run one ``session_search`` call against ``archive``; always returns a JSON string.

    ``current_session_id`` (the conversation the agent is in) is left out of results together with
    its lineage, so the model is not shown what it already has in context. With a ``summarizer``
    model, ``discover`` adds a short ``summary`` of the hits beside the raw messages.
    """
    try:
        args = parse_arguments(arguments, SESSION_SEARCH_TOOL_SCHEMA)
        action = _text(args, "action", choices=ACTIONS)
        if action is None:
            action = "discover" if _text(args, "query") else "browse"
        if action == "discover":
            return _discover(archive, args, current_session_id, summarizer)
        if action == "read":
            return _read(archive, args)
        if action == "scroll":
            return _scroll(archive, args)
        return _browse(archive, args, current_session_id)
    except InvalidArgument as exc:
        return refusal(exc)
    except SessionNotFound as exc:
        return failure(str(exc), field="session_id")
    except MnemoError as exc:
        return failure(str(exc))
