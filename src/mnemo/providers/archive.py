"""The archive as a :class:`mnemo.providers.MemoryProvider`: it records every turn and answers the
``session_search`` tool.

It adds no per-turn context of its own: the graph provider ranks the archived messages of earlier sessions
together with its memories (see :mod:`mnemo.recollection`), leaving out what :meth:`ArchiveProvider.in_context`
says the model still holds. Listeners added with :meth:`ArchiveProvider.add_session_listener` hear of each
session that ends or is left, once every message of it is archived (the graph extracts from it then)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..archive import Archive
from ..archive.records import SessionHits
from ..database import refuse_old_config_key
from ..embeddings import preload
from ..errors import InvalidArgument, MnemoError, excerpt
from ..llm import LLM
from ..scope import Scope
from ..storage import is_url, open_archive

# The module, not its names: the tool imports the archive, so either may be imported first.
from ..tools import session_search as _tool
from ..tools._json import failure
from .config_schema import ConfigField

if TYPE_CHECKING:
    from ..embeddings.protocol import Embedder

log = logging.getLogger("mnemo.archive")

TOOL_NAME = "session_search"
# Messages embedded after a turn, on the provider's worker: a turn's own, and a bounded share of any backlog.
EMBED_PER_TURN = 128


class ArchiveProvider:
    """Provider wrapper around a session archive (:class:`~mnemo.archive.Archive`, on SQLite or PostgreSQL).

    Give it an archive to borrow (it is never closed here, and keeps its own scope), or the database
    path or ``postgresql://`` URL (or nothing), in which case the archive is opened in :meth:`initialize`
    (there, else ``config["database"]``, else the home's ``database_url`` or database, see
    :mod:`mnemo.database`) for ``scope`` (else
    the config's ``user_id`` / ``agent_id`` / ``channel_id``) and closed by :meth:`shutdown`.

    With an ``embedder``, searches add a vector channel; new messages are embedded after each turn, on the
    provider's background thread (at most ``EMBED_PER_TURN`` at a time, so a backlog, such as an archive
    that had no vectors before, is caught up over the following turns), and a search never embeds any.

    Search summaries are off by default: pass a ``summarizer`` model, or set ``summarize = true`` in
    the provider's config to use the model configured in mnemo's settings (``llm_base_url``,
    ``llm_model``); the raw messages are returned either way.
    """

    def __init__(
        self,
        archive: Archive | str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        summarizer: LLM | None = None,
        embedder: Embedder | None = None,
        scope: Scope | None = None,
    ) -> None:
        if isinstance(archive, (str, os.PathLike)):
            archive, path = None, archive
        self._summarizer = summarizer
        self._embedder = embedder
        self._owned_summarizer: Any = None  # a client built from settings here, closed at shutdown
        self._archive = archive
        self._owned = archive is None
        self._path = path if path is None or is_url(path) else Path(path)
        self._scope = scope
        self._session_id: str | None = None
        self._lock = threading.Lock()
        # Turns already archived in full by record_messages, so on_turn_complete does not store their
        # user/assistant pair a second time.
        self._recorded_turns: set[tuple[str, str]] = set()
        self._source = "cli"
        # The last message of the current session that compression took out of the model's context.
        self._compressed_through = 0
        self._listeners: list[Callable[[str], None]] = []

    @property
    def name(self) -> str:
        """The provider's id: ``"archive"``."""
        return "archive"

    @property
    def archive(self) -> Archive | None:
        """The archive in use (``None`` before :meth:`initialize` when it opens its own)."""
        return self._archive

    @property
    def session_id(self) -> str | None:
        """The session being recorded."""
        return self._session_id

    def is_available(self) -> bool:
        """SQLite with FTS5 is part of Python; the archive is always available."""
        return True

    def in_context(self) -> tuple[str, int] | None:
        """``(session_id, message_id)``: the current session's messages after ``message_id`` are still in
        the model's context (``0`` until a compression took some out); ``None`` when no session is open.
        What recall leaves out of per-turn context."""
        with self._lock:
            return None if self._session_id is None else (self._session_id, self._compressed_through)

    def add_session_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(session_id)`` on this provider's worker whenever a session ends or is switched
        away from, after every message of it was archived. A listener that raises is logged; the others
        still run."""
        self._listeners.append(listener)

    def _left(self, session_id: str) -> None:
        for listener in self._listeners:
            try:
                listener(session_id)
            except Exception:  # noqa: BLE001 - one listener's failure must not stop the session's end
                log.exception("archive: a session listener failed for %r", session_id)

    def initialize(self, session_key: str, config: Mapping[str, Any]) -> None:
        """Open the archive if needed and start (or continue) the session ``session_key``.

        ``config`` may carry ``source``, ``title``, ``model``, ``parent_session_id`` for the session
        row, ``database`` / ``home`` to locate the database, ``user_id`` / ``agent_id`` / ``channel_id``
        for its scope (when none was given), and ``summarize`` (see the class).
        """
        config = dict(config or {})
        refuse_old_config_key(self.name, config)
        if config.get("summarize") and self._summarizer is None:
            from ..config import load_settings
            from ..llm import LLMNotConfigured, OpenAICompatibleLLM

            try:
                self._summarizer = self._owned_summarizer = OpenAICompatibleLLM.from_settings(
                    load_settings(config.get("home"))
                )
            except LLMNotConfigured as exc:
                log.warning("session_search summaries stay off: %s", exc)
        with self._lock:
            if self._archive is None or self._archive.closed and self._owned:
                path = self._path or config.get("database")
                if path is None:
                    from ..config import load_settings

                    path = load_settings(config.get("home")).database_target
                scope = self._scope or Scope(**{k: config[k] for k in ("user_id", "agent_id", "channel_id") if k in config})
                self._archive = open_archive(path, embedder=self._embedder, scope=scope, embed_at_search=False)
                self._owned = True
            self._source = config.get("source") or "cli"
            self._archive.start_session(
                session_key,
                source=self._source,
                title=config.get("title"),
                model=config.get("model"),
                parent_session_id=config.get("parent_session_id"),
                exist_ok=True,
            )
            self._session_id = session_key
        preload(self._embedder)  # a session will search soon: load the model while the host gets ready

    def config_schema(self) -> list[ConfigField]:
        """What ``mnemo providers setup archive`` asks for."""
        return [
            ConfigField("summarize", "summarise session_search results with the configured model (llm_* settings)", default=False),
            ConfigField("source", "the source recorded on this agent's sessions", default="cli"),
        ]

    def capabilities(self) -> dict[str, Any]:
        """Declares the ``session_search`` tool; never suppresses the curated store's writes."""
        return {
            "tool_names": {TOOL_NAME},
            "tool_schemas": [_tool.SESSION_SEARCH_TOOL_SCHEMA],
            "suppresses_local_writes": False,
        }

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """No per-turn context: the archive answers through its tool."""
        return None

    def handle_tool_call(self, name: str, arguments: Any) -> str:
        """Answer ``session_search``, leaving out the current session and its lineage."""
        if name != TOOL_NAME:
            return failure(f"unknown tool {excerpt(name)}; this provider serves {TOOL_NAME!r}", field="name")
        if self._archive is None or self._archive.closed:
            return failure("the session archive is not open")
        return _tool.handle_session_search(
            self._archive, arguments, current_session_id=self._session_id, summarizer=self._summarizer
        )

    def discover(self, query: str, **filters: Any) -> list[SessionHits]:
        """Search past sessions as the tool's ``discover`` action does (see
        :func:`mnemo.tools.session_search.discover`), leaving out the current session's lineage."""
        if self._archive is None or self._archive.closed:
            raise MnemoError("the session archive is not open")
        return _tool.discover(self._archive, query, current_session_id=self._session_id, **filters)

    def record_messages(self, session_id: str | None, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Archive a full message list (tool calls and results included) for ``session_id``
        (default: the current session); returns the new message ids."""
        session_id = session_id or self._session_id
        if self._archive is None or session_id is None:
            raise MnemoError("record_messages needs a session: call initialize first or pass session_id")
        ids = self._archive.append_many(session_id, list(messages))
        if session_id == self._session_id:
            turn = _last_turn(messages)
            if turn is not None:
                with self._lock:
                    self._recorded_turns.add(turn)
        return ids

    def on_turn_complete(self, user_message: Any, assistant_response: Any) -> None:
        """Record the turn's user message and assistant reply, unless :meth:`record_messages` already
        archived the whole turn; then embed what is new, so searches never wait for it."""
        if self._archive is None or self._session_id is None or self._archive.closed:
            return
        with self._lock:
            key = (str(user_message), str(assistant_response))
            recorded = key in self._recorded_turns
            self._recorded_turns.discard(key)
        if not recorded:
            self._archive.append_many(
                self._session_id,
                [{"role": "user", "content": user_message}, {"role": "assistant", "content": assistant_response}],
            )
        self._archive.embed_pending(EMBED_PER_TURN)

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Curated writes are not the archive's concern."""

    def on_compress(self, messages: Sequence[Mapping[str, Any]], compression_count: int) -> None:
        """Note how far compression took the current session out of the model's context, so recall may
        bring those messages back (every turn is already archived by :meth:`on_turn_complete`)."""
        session_id = self._session_id
        if self._archive is None or self._archive.closed or session_id is None or not messages:
            return
        located = [found for found in self._archive.locate(session_id, messages) if found is not None]
        with self._lock:
            if located and self._session_id == session_id:
                self._compressed_through = max(self._compressed_through, *located)

    def on_session_switch(
        self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool
    ) -> None:
        """Record from now on under ``new_session_id`` (continued if it exists), whose parent is
        ``parent_session_id``: the lineage ``session_search`` leaves out follows the switch. A parent
        unknown to this scope's archive is logged and the session kept without one; an id this scope
        cannot use stops the recording (the error is logged by the registry)."""
        if self._archive is None or self._archive.closed:
            return
        with self._lock:
            # Until the new session exists nothing is recorded: the old session must not receive the
            # new one's turns (and an id taken by another scope is never written to).
            left, self._session_id = self._session_id, None
            self._recorded_turns.clear()
            self._compressed_through = 0
            try:
                self._archive.start_session(
                    new_session_id, source=self._source, parent_session_id=parent_session_id, exist_ok=True
                )
            except InvalidArgument as exc:
                if exc.field != "parent_session_id":
                    raise
                log.warning("archive: %s; session %r recorded without a parent", exc.problem, new_session_id)
                self._archive.start_session(new_session_id, source=self._source, exist_ok=True)
            self._session_id = new_session_id
        if left is not None and left != new_session_id:
            self._left(left)

    def on_session_end(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Mark the current session ended (its messages were archived turn by turn already), then tell the
        session listeners."""
        if self._archive is None or self._archive.closed or self._session_id is None:
            return
        self._archive.end_session(self._session_id)
        self._left(self._session_id)

    def on_delegation(self, task: str, result: str, child_session_id: str) -> None:
        """Keep the delegated task and the subagent's result in the current (parent) session, as the
        assistant's hand-off and a ``delegation`` tool result naming the child session."""
        if self._archive is None or self._archive.closed or self._session_id is None:
            return
        self._archive.append_many(
            self._session_id,
            [
                {"role": "assistant", "content": f"Delegated to a subagent: {task}"},
                {"role": "tool", "name": "delegation", "content": result, "child_session_id": child_session_id},
            ],
        )
        self._archive.embed_pending(EMBED_PER_TURN)

    def shutdown(self) -> None:
        """Close the archive (and summary client) if this provider opened them; idempotent, never raises."""
        with self._lock:
            if self._owned_summarizer is not None:
                try:
                    self._owned_summarizer.close()
                except Exception:  # noqa: BLE001 - shutdown must never raise
                    log.exception("closing the summary model client failed")
                self._owned_summarizer = self._summarizer = None
            if self._owned and self._archive is not None:
                try:
                    self._archive.close()
                except Exception:  # noqa: BLE001 - shutdown must never raise
                    log.exception("closing the session archive failed")


def _last_turn(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """The (user message, final assistant reply) pair a turn's message list ends with, as text."""
    reply = next((m for m in reversed(messages) if m.get("role") == "assistant" and not m.get("tool_calls")), None)
    user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    if reply is None or user is None or not isinstance(user.get("content"), str):
        return None
    return user["content"], str(reply.get("content") or "")
