"""Importing conversations from JSONL files of OpenAI-style messages.

Two shapes are accepted, and may not be mixed in one file:

- one message object per line (``{"role": ..., "content": ...}``): the whole file is one session;
- one session per line: an object ``{"messages": [...], "id"?, "title"?, "source"?, "model"?,
  "started_at"?, "parent_session_id"?}`` or a bare list of messages.

The whole file is parsed and validated before anything is written, so a bad line changes nothing.
Sessions whose id already exists are skipped, which makes re-importing the same file harmless.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument
from .records import message_row, require_encodable

if TYPE_CHECKING:
    from .store import SessionArchive

log = logging.getLogger("mnemo.archive")

_SESSION_KEYS = ("title", "source", "model", "started_at", "parent_session_id")


@dataclass
class _PendingSession:
    messages: list[Mapping[str, Any]]
    fields: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None


def _validate(where: str, messages: list[Any]) -> None:
    for index, message in enumerate(messages):
        try:
            require_encodable(message_row(message, default_time=0.0))
        except InvalidArgument as exc:
            raise InvalidArgument(f"{where}[{index}].{exc.field.removeprefix('message.')}", exc.problem) from None


def _read(path: Path, source: str) -> list[_PendingSession]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidArgument("path", f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidArgument("path", f"{path} is not valid UTF-8") from exc
    whole_file: list[Mapping[str, Any]] = []
    sessions: list[_PendingSession] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(where, f"not valid JSON ({exc.msg})") from None
        if isinstance(item, list):
            _validate(where, item)
            sessions.append(_PendingSession(item, {"source": source}))
        elif isinstance(item, Mapping) and "messages" in item:
            if not isinstance(item["messages"], list):
                raise InvalidArgument(f"{where}.messages", "must be a list of messages")
            _validate(f"{where}.messages", item["messages"])
            fields = {"source": source, **{k: item[k] for k in _SESSION_KEYS if item.get(k) is not None}}
            session_id = item.get("id", item.get("session_id"))
            if session_id is not None and not isinstance(session_id, str):
                raise InvalidArgument(f"{where}.id", "must be a string")
            sessions.append(_PendingSession(item["messages"], fields, session_id))
        elif isinstance(item, Mapping) and "role" in item:
            _validate(where, [item])
            whole_file.append(item)
        else:
            raise InvalidArgument(where, "expected a message object, a session object with 'messages', or a list")
    if whole_file and sessions:
        raise InvalidArgument("path", f"{path.name} mixes message lines and session lines")
    if whole_file:
        sessions.append(_PendingSession(whole_file, {"source": source, "title": path.stem}))
    return sessions


def _carry_timestamps(messages: list[Mapping[str, Any]], start: Any) -> list[Mapping[str, Any]]:
    # A message without a time of its own happened no earlier than the one before it; without this
    # an old conversation's untimed replies would be dated to the moment of import.
    filled: list[Mapping[str, Any]] = []
    current = start
    for message in messages:
        if message.get("timestamp") is None:
            message = {**message, "timestamp": current}
        current = message["timestamp"]
        filled.append(message)
    return filled


def import_jsonl(
    archive: SessionArchive,
    path: str | Path,
    *,
    source: str = "import",
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Import ``path`` into ``archive``; return the ids of the sessions created.

    ``progress(n)`` is called after each session with its message count (for a progress bar).
    """
    sessions = _read(Path(path), source)
    created: list[str] = []
    for pending in sessions:
        if pending.session_id is not None and archive.get_session(pending.session_id) is not None:
            log.info("session %s already archived; skipped", pending.session_id)
        else:
            started = pending.fields.pop("started_at", None)
            if started is None:
                first = next((m.get("timestamp") for m in pending.messages if m.get("timestamp") is not None), None)
                started = first if first is not None else time.time()
            session_id = archive.start_session(pending.session_id, started_at=started, **pending.fields)
            archive.append_many(session_id, _carry_timestamps(pending.messages, started))
            last = next((m.get("timestamp") for m in reversed(pending.messages) if m.get("timestamp") is not None), started)
            archive.end_session(session_id, ended_at=last)
            created.append(session_id)
        if progress is not None:
            progress(len(pending.messages))
    return created
