"""Importing conversations from JSONL files of OpenAI-style messages.

Two shapes are accepted, and may not be mixed in one file:

- one message object per line (``{"role": ..., "content": ...}``): the whole file is one session;
- one session per line: an object ``{"messages": [...], "id"?, "title"?, "source"?, "model"?,
  "started_at"?, "parent_session_id"?}`` or a bare list of messages.

Roles are the archive's (system, user, assistant, tool, and the aliases developer and function).

The whole file is parsed and validated before anything is written (every message, every session field,
and that a ``parent_session_id`` names a session archived already or earlier in the file), so a bad line
changes nothing and the error names the line. Each session is then written in one transaction.

Importing is idempotent: a session without an ``id`` gets one derived from its content (its messages and
the fields its line states), so importing the same file again skips every session already archived, and
an import that was interrupted finishes the rest when run again. A session whose content changed (a
conversation file that grew) has another derived id, so it imports as a new session.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._time import to_timestamp
from ..errors import InvalidArgument
from .records import message_row, require_encodable

if TYPE_CHECKING:
    from .base import Archive

log = logging.getLogger("mnemo.archive")

_SESSION_KEYS = ("title", "source", "model", "started_at", "parent_session_id")


@dataclass(frozen=True)
class ImportReport:
    """What an import did: the sessions it added, those already archived, and the messages added."""

    created: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    messages: int = 0


@dataclass
class _PendingSession:
    where: str  # the file and line it came from, for errors
    messages: list[Mapping[str, Any]]
    stated: dict[str, Any] = field(default_factory=dict)  # the session fields its line gives
    session_id: str | None = None
    title: str | None = None  # a whole-file session's, from the file name (not part of its identity)

    def content_id(self, seen: Counter[str]) -> str:
        """An id derived from what the line says, so the same session imported again gets the same id;
        the n-th identical session of a file gets a suffix."""
        canonical = json.dumps(
            {"messages": self.messages, **self.stated},
            sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str,
        )  # fmt: skip
        digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        seen[digest] += 1
        return f"import-{digest}" if seen[digest] == 1 else f"import-{digest}-{seen[digest]}"


def _session_fields(where: str, item: Mapping[str, Any]) -> dict[str, Any]:
    stated = {k: item[k] for k in _SESSION_KEYS if item.get(k) is not None}
    for key in ("title", "source", "model", "parent_session_id"):
        if key in stated and not (isinstance(stated[key], str) and stated[key].strip()):
            raise InvalidArgument(f"{where}.{key}", "must be a non-empty string")
    if "started_at" in stated:
        to_timestamp(stated["started_at"], f"{where}.started_at")
    return stated


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
            sessions.append(_PendingSession(where, item))
        elif isinstance(item, Mapping) and "messages" in item:
            if not isinstance(item["messages"], list):
                raise InvalidArgument(f"{where}.messages", "must be a list of messages")
            _validate(f"{where}.messages", item["messages"])
            session_id = item.get("id", item.get("session_id"))
            if session_id is not None and not (isinstance(session_id, str) and session_id.strip()):
                raise InvalidArgument(f"{where}.id", "must be a non-empty string")
            sessions.append(_PendingSession(where, item["messages"], _session_fields(where, item), session_id))
        elif isinstance(item, Mapping) and "role" in item:
            _validate(where, [item])
            whole_file.append(item)
        else:
            raise InvalidArgument(where, "expected a message object, a session object with 'messages', or a list")
    if whole_file and sessions:
        raise InvalidArgument("path", f"{path.name} mixes message lines and session lines")
    if whole_file:
        sessions.append(_PendingSession(path.name, whole_file, title=path.stem))
    seen: Counter[str] = Counter()
    for pending in sessions:
        if pending.session_id is None:
            pending.session_id = pending.content_id(seen)
    return sessions


def _check_parents(archive: Archive, sessions: list[_PendingSession]) -> None:
    known: set[str] = set()
    for pending in sessions:
        parent = pending.stated.get("parent_session_id")
        if parent is not None and parent not in known and archive.get_session(parent) is None:
            raise InvalidArgument(
                f"{pending.where}.parent_session_id", f"no session {parent!r} in the archive or earlier in the file"
            )
        known.add(str(pending.session_id))


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
    archive: Archive,
    path: str | Path,
    *,
    source: str = "import",
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import ``path`` into ``archive``: the sessions added, those skipped as already archived, and the
    number of messages added. ``source`` is recorded on sessions whose line names none.

    ``progress(n)`` is called after each session with its message count (for a progress bar).
    """
    path = Path(path)
    sessions = _read(path, source)
    _check_parents(archive, sessions)
    created: list[str] = []
    skipped: list[str] = []
    added = 0
    for pending in sessions:
        session_id = str(pending.session_id)
        fields = {"source": source, "title": pending.title, **pending.stated}
        started = fields.pop("started_at", None)
        if started is None:
            first = next((m.get("timestamp") for m in pending.messages if m.get("timestamp") is not None), None)
            started = first if first is not None else time.time()
        with archive.transaction():
            # Checked inside the transaction, so two processes importing one file cannot both add it.
            if archive.get_session(session_id) is not None:
                log.info("session %s already archived; skipped", session_id)
                skipped.append(session_id)
            else:
                archive.start_session(session_id, started_at=started, **fields)
                archive.append_many(session_id, _carry_timestamps(pending.messages, started))
                last = next((m.get("timestamp") for m in reversed(pending.messages) if m.get("timestamp") is not None), started)
                archive.end_session(session_id, ended_at=last)
                created.append(session_id)
                added += len(pending.messages)
        if progress is not None:
            progress(len(pending.messages))
    return ImportReport(tuple(created), tuple(skipped), added)
