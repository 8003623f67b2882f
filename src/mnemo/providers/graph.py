"""The memory graph as a :class:`~mnemo.providers.MemoryProvider` named ``"graph"``.

Per turn it adds what is most relevant to the user's message within a character budget: its memories and,
given the archive's provider, the archived messages of earlier sessions, ranked together (see
:mod:`mnemo.recollection`), leaving out whatever the frozen curated snapshot already shows and what the
model still holds. It declares the ``recall``, ``remember``, ``relate`` and ``forget`` tools, imports the
curated files once on first use, and mirrors later curated writes (add -> new memory, replace -> new
version with an ``updates`` edge, remove -> forgotten).

Extraction needs nothing from the host: when a session ends or is left, the archive's provider tells this
one, which extracts from the archive's own record of the session; sessions a killed process never ended
are extracted in the background when the next session opens. Before context compression it also extracts
from the messages about to be discarded, and messages a host hands over at the end are used where the
archive lacks them.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..database import refuse_old_config_key
from ..deep_recall import TIMEOUT as DEEP_TIMEOUT
from ..embeddings import named_embedder, preload
from ..embeddings.cross_encoder import shared_cross_encoder
from ..errors import ConfigError, MnemoError
from ..graph.backfill import backfill
from ..graph.bulletin import session_bulletin, synthesize_with
from ..graph.extract_rules import extract as extract_by_rules
from ..graph.extraction import Extractor, extract_messages, extracted_from
from ..graph.maintenance import SESSION_BUDGET, maintain
from ..graph.migrate_curated import TARGET_TYPES, curated_source, import_curated
from ..graph.review import WriteKind
from ..graph.store import SCAN_PER_RECALL, MemoryGraph
from ..graph.types import Memory, MemoryType, Scope
from ..provenance import OPERATOR, Origin, Provenance
from ..recollection import comparable, memory_line, turn_context
from ..review import MODEL_WRITES, WriteGate, graph_payload
from ..storage import open_graph
from ..tools.graph import GRAPH_TOOL_NAMES, GRAPH_TOOL_SCHEMAS, handle_graph_call
from .archive import ArchiveProvider
from .config_schema import ConfigField

if TYPE_CHECKING:
    from ..archive import Archive
    from ..config import Settings
    from ..embeddings.protocol import Embedder
    from ..llm.protocol import LLM

log = logging.getLogger("mnemo.graph")

DEFAULT_CONTEXT_CHARS = 1500
ENRICH_LIMIT = 16
# Memories embedded after a turn, on the provider's worker.
EMBED_PER_TURN = 128
# Sessions looked at, newest first, for messages a killed process never had extracted.
RECOVERED_SESSIONS = 20
# The source of memories the graph keeps of finished delegations.
DELEGATION_SOURCE = "delegation"


class GraphProvider:
    """The memory graph's provider.

    Give it an open :class:`MemoryGraph` (borrowed: :meth:`shutdown` leaves it open), or let
    :meth:`initialize` open one from its config: ``database`` (or ``home``, meaning that home's database),
    optional ``user_id`` / ``agent_id`` / ``channel_id`` (the scope, unless :meth:`from_settings` fixed it to
    the settings' scope), ``memories_dir`` (run the one-time
    curated import), ``context_chars`` (the per-turn budget), ``frozen_entries`` (the curated snapshot's
    entries, never repeated per turn).
    """

    name = "graph"

    def __init__(
        self,
        graph: MemoryGraph | None = None,
        *,
        embedder: Embedder | None = None,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
        enrich_limit: int = ENRICH_LIMIT,
        archive: ArchiveProvider | None = None,
    ) -> None:
        self._graph = graph
        # The archive's provider, when the graph draws on it: recall ranks its messages beside the memories,
        # and extraction reads each session it records once the session is over.
        self._archive = archive
        if archive is not None:
            archive.add_session_listener(self.extract_session)
        self._recovery: threading.Thread | None = None
        self._stopping = threading.Event()
        self._owns_graph = False
        self._embedder = embedder
        self.context_chars = context_chars
        self.enrich_limit = enrich_limit
        self._frozen: frozenset[str] = frozenset()
        self._frozen_source: Callable[[], Iterable[str]] | None = None
        self._defaults: dict[str, Any] = {}
        self._scope: Scope | None = None
        self._lock = threading.Lock()
        # Session-start maintenance (off unless from_settings or the caller sets it) and the bulletin.
        self.maintenance: dict[str, Any] = {"interval_hours": 0.0}
        self.bulletin_chars = 0
        # Makes the model that condenses the bulletin after a pass (None: the plain render only).
        self.synthesizer: Callable[[], LLM] | None = None
        self._bulletin = ""
        self._session_key: str | None = None
        self._extractor: Extractor = extract_by_rules
        self._owned_llm: Any = None
        # Stamps the model's writes and holds the untrusted ones (an AgentMemory gives its session's).
        self.gate: WriteGate = MODEL_WRITES
        # Deep recall's deadline (the recall tool's deep flag), and whether per-turn context uses it too.
        self.deep_timeout = DEEP_TIMEOUT
        self.deep_per_turn = False

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        frozen_entries: Callable[[], Iterable[str]] | Iterable[str] | None = None,
        embedder: Embedder | None = None,
        archive: ArchiveProvider | None = None,
    ) -> GraphProvider:
        """A provider on ``settings.database_target`` (the ``database_url``, else the home's database), in ``settings.scope``, that imports
        ``settings.memories_dir`` once and spends ``settings.graph_context_chars`` per turn. ``frozen_entries`` may be a callable, read at
        :meth:`initialize` (after the curated snapshot is frozen). Without an ``embedder``, the one named by
        ``settings.graph_embedder`` is used. ``archive`` is the archive's provider to draw on (in the same
        database and scope). The per-provider config passed to :meth:`initialize` still overrides all of these."""
        if embedder is None:
            embedder = named_embedder(settings.graph_embedder, cache_dir=settings.cache_directory)
        provider = cls(embedder=embedder, context_chars=settings.graph_context_chars, archive=archive)
        provider.deep_timeout = settings.recall_deep_ms / 1000
        provider.deep_per_turn = settings.recall_deep
        provider.maintenance = {
            "interval_hours": settings.maintenance_interval_hours,
            "prune_below": settings.prune_below,
            "prune_after_days": settings.prune_after_days,
        }
        provider.bulletin_chars = settings.bulletin_chars
        provider.gate = WriteGate(
            expire_days=settings.review_expire_days, quarantine=settings.quarantine,
            trusted_tools=trusted_tools(settings),
        )  # fmt: skip
        if settings.bulletin_llm:
            provider.synthesizer = lambda: bulletin_model(settings)
        provider._defaults = {
            "database": str(settings.database_target),
            "memories_dir": str(settings.memories_dir),
            "scan_threshold": settings.scan_threshold,
        }
        if settings.graph_extractor == "llm":
            provider._extractor, provider._owned_llm = _llm_extractor(settings)
        # The settings' scope is the whole AgentMemory's (the archive's too): a provider table cannot split it.
        provider._scope = settings.scope
        if callable(frozen_entries):
            provider._frozen_source = frozen_entries
        elif frozen_entries is not None:
            provider.set_frozen_entries(frozen_entries)
        return provider

    @property
    def graph(self) -> MemoryGraph:
        """The graph this provider serves; raises before :meth:`initialize` when none was given."""
        if self._graph is None:
            raise MnemoError("the graph provider is not initialized")
        return self._graph

    def is_available(self) -> bool:
        """Always: the graph needs only SQLite, which ships with Python."""
        return True

    def initialize(self, session_key: str, config: Mapping[str, Any]) -> None:
        """Open (or adopt) the graph for this session's scope and run the one-time curated import."""
        config = {**self._defaults, **(config or {})}
        refuse_old_config_key(self.name, config)
        self._session_key = session_key
        if self._frozen_source is not None:
            self.set_frozen_entries(self._frozen_source())
        # Everything is validated before the database is opened, so a refusal leaves nothing open.
        scope_keys = {k: config[k] for k in ("user_id", "agent_id", "channel_id") if k in config}
        if self._scope is not None:
            scope, scope_keys = self._scope, self._scope.as_dict()
        else:
            scope = Scope(**{**(self._graph.scope.as_dict() if self._graph else {}), **scope_keys})
        if "context_chars" in config:
            chars = config["context_chars"]
            if isinstance(chars, bool) or not isinstance(chars, int) or chars < 0:
                raise ConfigError(f"graph provider: context_chars must be a non-negative integer, got {chars!r}")
            self.context_chars = chars
        if self._graph is None:
            database = config.get("database") or (_home_database(config["home"]) if config.get("home") else None)
            if database is None:
                raise ConfigError("graph provider: config needs 'database' or 'home'")
            self._graph = open_graph(
                database, scope=scope, embedder=self._embedder, scan_threshold=config.get("scan_threshold")
            )
            self._owns_graph = True
        elif scope_keys:
            self._graph = self._graph.with_scope(scope)
        if "frozen_entries" in config:
            self.set_frozen_entries(config["frozen_entries"])
        if self.deep_per_turn:
            shared_cross_encoder().preload()  # per-turn recall never waits for the load
        if config.get("memories_dir"):
            try:
                imported = import_curated(self.graph, config["memories_dir"])
            except BaseException:
                self.shutdown()  # the registry drops a provider whose initialize raised; leave nothing open
                raise
            if imported:
                log.info("graph: imported %d curated entries", imported)
        self._start_maintenance()
        self._bulletin = self._render_bulletin()
        preload(self._embedder)
        if self._archive_store() is not None and self._recovery is None:
            self._recovery = threading.Thread(target=self._recover, name="mnemo-graph-recover", daemon=True)
            self._recovery.start()

    def _archive_store(self) -> Archive | None:
        """The archive drawn on, when there is one and it is open."""
        archive = None if self._archive is None else self._archive.archive
        return None if archive is None or archive.closed else archive

    def extract_session(self, session_id: str) -> None:
        """Extract every archived message of ``session_id`` not extracted before (the archive's provider
        calls this when the session ends or is left); a failure is logged, and the next open retries."""
        archive = self._archive_store()
        if archive is None or self._graph is None:
            return
        try:
            report = backfill(
                self.graph, archive, [session_id], extractor=self._extractor, advance=self._unless_stopping,
                review=self.gate.queue(self.graph) if self.gate.quarantine else None,
                trusted_tools=self.gate.trusted_tools,
            )  # fmt: skip
        except _Stopping:
            return
        except (MnemoError, sqlite3.Error) as exc:
            log.warning("graph: extraction of session %r failed: %s", session_id, exc)
            return
        log.info("graph: extracted session %r: %s", session_id, report.as_dict())

    def _unless_stopping(self, _count: int) -> None:
        if self._stopping.is_set():
            raise _Stopping

    def _recover(self) -> None:
        """Extract the recent sessions whose messages were never all extracted (their process was killed
        before the session ended), newest first, stopping at shutdown."""
        archive = self._archive_store()
        current = self._session_key
        try:
            for info in archive.list_sessions(limit=RECOVERED_SESSIONS) if archive is not None else ():
                if self._stopping.is_set():
                    return
                if info.id != current and info.message_count > len(extracted_from(self.graph, info.id)):
                    self.extract_session(info.id)
        except (MnemoError, sqlite3.Error) as exc:
            log.warning("graph: looking for sessions to extract failed: %s", exc)

    def _start_maintenance(self) -> None:
        """A bounded maintenance pass when one is due; a failure is logged, never fatal to the session."""
        try:
            report = maintain(self.graph, due_only=True, budget=SESSION_BUDGET, **self.maintenance)
        except (MnemoError, sqlite3.Error) as exc:
            log.warning("graph: maintenance failed: %s", exc)
            return
        if report.skipped is None:
            log.info("graph: maintenance %s", report.as_dict())
            if report.complete and self.synthesizer is not None and self.bulletin_chars > 0:
                synthesize_with(self.graph, self.synthesizer, self.bulletin_chars)

    def _render_bulletin(self) -> str:
        if self.bulletin_chars <= 0:
            return ""
        try:
            return session_bulletin(self.graph, self.bulletin_chars, synthesized=self.synthesizer is not None)
        except (MnemoError, sqlite3.Error) as exc:
            log.warning("graph: no bulletin this session: %s", exc)
            return ""

    def bulletin(self) -> str:
        """The bulletin rendered when this session started (frozen: "" when off or empty)."""
        return self._bulletin

    def set_frozen_entries(self, entries: Iterable[str]) -> None:
        """The entries of this session's frozen curated snapshot; per-turn context never repeats them."""
        self._frozen = frozenset(comparable(e) for e in entries if isinstance(e, str))

    def config_schema(self) -> list[ConfigField]:
        """What ``mnemo providers setup graph`` asks for (no defaults: unset keeps mnemo's settings)."""
        return [ConfigField("context_chars", "characters of recalled memories added per turn (default: graph_context_chars)", kind=int)]

    def capabilities(self) -> dict[str, Any]:
        """The four graph tools; local curated writes are never suppressed."""
        return {"tool_names": set(GRAPH_TOOL_NAMES), "tool_schemas": [dict(s) for s in GRAPH_TOOL_SCHEMAS]}

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """What is most relevant to ``user_message`` (memories and earlier sessions' messages), one per line
        within the character budget, newest first."""
        if not isinstance(user_message, str) or not user_message.strip() or self.context_chars <= 0:
            return None
        found = turn_context(
            self.graph, self._archive_store(), user_message, budget=self.context_chars, most=self.enrich_limit,
            frozen=self._frozen, in_context=self._archive.in_context() if self._archive is not None else None,
            deep_timeout=self.deep_timeout if self.deep_per_turn else None,
        )  # fmt: skip
        return found.text or None

    def handle_tool_call(self, name: str, arguments: Any) -> str:
        """Run ``recall`` (over the archive's earlier sessions too), ``remember``, ``relate`` or ``forget``;
        a JSON string."""
        in_context = self._archive.in_context() if self._archive is not None else None
        return handle_graph_call(self.graph, name, arguments, archive=self._archive_store(), in_context=in_context,
                                 gate=self.gate, deep_timeout=self.deep_timeout)

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Mirror one accepted curated write into the graph."""
        kind = TARGET_TYPES.get(target)
        if kind is None:
            log.warning("graph: ignoring a memory write to unknown target %r", target)
            return
        source = curated_source(target)
        provenance = self.gate.mirror_provenance(target, content) if action != "remove" else None
        try:
            if provenance is not None and self.gate.holds(provenance):
                # A host's own memory tool wrote it after untrusted content: it waits outside the graph.
                payload = graph_payload(content, kind.value, importance=None, subject="", source=source)
                self.gate.queue(self.graph).submit(WriteKind.GRAPH, payload, provenance)
            elif action == "add":
                if self._mirror_of(source, content, exact=True) is None:
                    self.graph.remember(content, kind, source=source, provenance=provenance or OPERATOR)
            elif action == "replace":
                old = self._mirror_of(source, old_text or "")
                if old is None:
                    self.graph.remember(content, kind, source=source, provenance=provenance or OPERATOR)
                elif comparable(old.content) != comparable(content):
                    self.graph.replace(old.id, content, provenance=provenance or OPERATOR)
            elif action == "remove":
                old = self._mirror_of(source, old_text or content or "")
                if old is not None:
                    self.graph.forget(old.id)
            else:
                log.warning("graph: ignoring unknown memory action %r", action)
        except MnemoError as exc:
            log.warning("graph: could not mirror %s on %s: %s", action, target, exc)

    def _mirror_of(self, source: str, text: str, *, exact: bool = False) -> Memory | None:
        """The live graph copy of the curated entry that ``text`` identifies, as the curated store
        matched it: an exactly equal entry first, else the newest one containing ``text``."""
        needle = text.strip()
        if not needle:
            return None
        live = [m for m in self.graph.memories(source=source) if not m.superseded]
        for memory in reversed(live):
            if memory.content == needle:
                return memory
        if exact:
            return None
        return next((m for m in reversed(live) if needle in m.content), None)

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Embed up to ``EMBED_PER_TURN`` pending memories (per-turn context never waits for them; a backlog
        is caught up over the following turns). The graph learns from explicit writes and extraction, not
        from every turn."""
        if self._graph is not None and self._graph.embedder is not None:
            self._graph.embed_pending(EMBED_PER_TURN, scan=SCAN_PER_RECALL)

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> str | None:
        """Turn the messages about to be discarded into typed memories linked to their archive rows
        (see :mod:`mnemo.graph.extraction`); a message extracted before adds nothing. Returns the new
        memories, one per line, for the summariser to keep (``None`` when there are none)."""
        memories = self._extract(messages, "before compression")
        return "\n".join(memory_line(memory) for memory in memories) or None

    def on_session_end(self, messages: list[dict[str, str]]) -> None:
        """Extract from the messages the host hands over those the archive lacks (the archive's record of
        the session is extracted when its provider says the session ended; the same rules either way:
        once per message, scanned, de-duplicated)."""
        archive = self._archive_store()
        if archive is not None and messages and self._session_key is not None:
            found = archive.locate(self._session_key, messages)
            messages = [message for message, archived in zip(messages, found, strict=True) if archived is None]
        self._extract(messages, "at session end")

    def _extract(self, messages: list[dict[str, str]], when: str) -> list[Memory]:
        if self._session_key is None or not messages:
            return []
        try:
            report = extract_messages(
                self.graph, self._session_key, messages, extractor=self._extractor,
                review=self.gate.queue(self.graph) if self.gate.quarantine else None,
                trusted_tools=self.gate.trusted_tools,
            )  # fmt: skip
        except (MnemoError, sqlite3.Error) as exc:
            log.warning("graph: extraction %s failed: %s", when, exc)
            return []
        log.info("graph: extracted %s: %s", when, report.as_dict())
        return report.memories

    def on_session_switch(
        self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool
    ) -> None:
        """On a reset the curated snapshot was re-frozen: stop leaving out entries it no longer shows
        (and start leaving out the new ones), and render the bulletin afresh for the new conversation.
        Memories belong to the scope, not the session, so nothing else changes."""
        self._session_key = new_session_id
        if reset:
            if self._frozen_source is not None:
                self.set_frozen_entries(self._frozen_source())
            self._bulletin = self._render_bulletin()

    def on_delegation(self, task: str, result: str, child_session_id: str) -> None:
        """Keep a finished delegation as an ``event`` memory, held for review: another agent wrote its
        result (content past the graph's size limit is cut)."""
        content = f"Delegated task: {' '.join(task.split())}\nResult: {' '.join(result.split())}"
        limit = self.graph.max_content_chars
        if len(content) > limit:
            content = content[: limit - 1].rstrip() + "…"
        source = child_session_id or DELEGATION_SOURCE
        provenance = Provenance(Origin.AGENT, "delegation", source, self._session_key or "", excerpt=result[:200])
        if not self.gate.holds(provenance):
            self.graph.remember(content, MemoryType.EVENT, source=DELEGATION_SOURCE, provenance=provenance)
            return
        payload = graph_payload(content, MemoryType.EVENT.value, importance=None, subject="", source=DELEGATION_SOURCE)
        self.gate.queue(self.graph).submit(WriteKind.GRAPH, payload, provenance)

    def shutdown(self) -> None:
        """Stop the background extraction, close the graph (and LLM client) if this provider opened them;
        idempotent, never raises."""
        self._stopping.set()
        if self._recovery is not None and self._recovery is not threading.current_thread():
            self._recovery.join(timeout=_RECOVERY_JOIN_SECONDS)
        with self._lock:
            llm, self._owned_llm = self._owned_llm, None
        if llm is not None:
            try:
                llm.close()
            except Exception:  # shutdown must never raise
                log.exception("graph: error while closing the extraction LLM client")
        with self._lock:
            if not self._owns_graph or self._graph is None:
                return
            graph, self._graph, self._owns_graph = self._graph, None, False
        try:
            graph.close()
        except Exception:  # shutdown must never raise
            log.exception("graph: error while closing")


def trusted_tools(settings: Settings) -> frozenset[str]:
    """Tools whose results in a transcript do not taint: the ``trusted_tools`` setting's, and mnemo's own
    memory tools (their results only echo memory already admitted)."""
    return frozenset({*settings.trusted_tools, "memory", *GRAPH_TOOL_NAMES})


# How long shutdown waits for the background extraction to notice it should stop (it stops between batches).
_RECOVERY_JOIN_SECONDS = 5.0


class _Stopping(Exception):
    """Raised between extraction batches once shutdown has begun."""


def _home_database(home: str) -> str | Path:
    """Where a home keeps its graph: its ``database_url`` when set, else its SQLite database."""
    from ..config import load_settings

    return load_settings(home).database_target


def _llm_extractor(settings: Settings) -> tuple[Extractor, Any]:
    """The LLM extractor on the configured model, bounded well inside the compression deadline; the
    deterministic extractor (and a warning) when no model is configured."""
    from ..graph.extract_llm import LLMExtractor
    from ..llm import LLMNotConfigured, OpenAICompatibleLLM

    try:
        llm = OpenAICompatibleLLM.from_settings(settings, max_retries=0)
    except LLMNotConfigured as exc:
        log.warning("graph: graph_extractor is 'llm' but %s; extracting by rules", exc)
        return extract_by_rules, None
    return LLMExtractor(llm, deadline=settings.compress_timeout * 0.8), llm


def bulletin_model(settings: Settings) -> LLM:
    """The configured model that condenses the bulletin (raises LLMNotConfigured when none is)."""
    # Imported here: the OpenAI client costs a noticeable import, and only bulletin synthesis needs it.
    from ..llm.openai_compatible import OpenAICompatibleLLM

    return OpenAICompatibleLLM.from_settings(settings)
