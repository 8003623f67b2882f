"""mnemo as Hermes Agent's external memory provider.

Imported only inside Hermes, by the plugin folder ``mnemo hermes install`` writes
(``$HERMES_HOME/plugins/mnemo/``); it subclasses Hermes' own ``MemoryProvider``. Hermes keeps its
built-in ``MEMORY.md`` / ``USER.md`` and its ``memory`` tool; mnemo adds the memory graph (typed memories,
hybrid recall, the bulletin, extraction before compression) and its session archive, behind one
:class:`~mnemo.AgentMemory` per Hermes session:

- storage is mnemo's own, in ``HERMES_HOME/mnemo/`` (``mnemo.db``, vectors, ``config.toml``): never
  Hermes' ``state.db``, never outside the profile's home;
- memories are scoped by Hermes' ``user_id`` (gateway users never see each other's) and agent identity
  (the profile); in contexts other than ``primary`` (subagents, cron, flush) mnemo stays off entirely,
  because even a recall writes (access counts, vectors) and a session start may run maintenance;
- every hook returns quickly and never raises into Hermes: a failure is logged with its reason, and the
  agent goes on without memory for that call.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agent.memory_provider import MemoryProvider  # Hermes' ABC: this module only loads inside Hermes

from ..agent import AgentMemory
from ..config import load_settings
from ..curated.entries import parse_entries
from ..curated.files import MemoryFile, UnreadableFile
from ..errors import ConfigError, InvalidArgument
from ..providers import GraphProvider
from ..providers.configuration import update_settings
from ..scope import check_id
from ..taint import tool_call_names

log = logging.getLogger("mnemo.hermes")

PROVIDER_NAME = "mnemo"
HOME_DIRNAME = "mnemo"
TOOL_PREFIX = "mnemo_"
# Hermes' own tools (memory, session_search) stay Hermes'; these are mnemo's, under prefixed names.
_EXPOSED_TOOLS = ("recall", "remember", "relate", "forget", "session_search")
_HERMES_MEMORY_FILES = ("MEMORY.md", "USER.md")

# What `hermes memory setup` asks for; each is one of mnemo's settings, saved in HERMES_HOME/mnemo/config.toml.
CONFIG_FIELDS: tuple[dict[str, Any], ...] = (
    {"key": "graph_embedder", "description": "local vectors beside full text (minilm) or full text only (none)",
     "default": "minilm", "choices": ["minilm", "none"]},
    {"key": "graph_context_chars", "description": "characters of recalled memories added to each turn", "default": 1500},
    {"key": "bulletin_chars", "description": "characters of the memory bulletin in the system prompt (0: none)",
     "default": 1500},
    {"key": "graph_extractor", "description": "how memories are extracted before compression: rules (no LLM) or llm",
     "default": "rules", "choices": ["rules", "llm"]},
    {"key": "maintenance_interval_hours", "description": "hours between graph maintenance passes at session start (0: never)",
     "default": 24},
)  # fmt: skip

T = TypeVar("T")


def mnemo_home(hermes_home: str | os.PathLike[str]) -> Path:
    """Where mnemo keeps its data inside a Hermes home (a profile's home for a profile)."""
    return Path(hermes_home) / HOME_DIRNAME


def scope_id(value: object, field: str) -> str:
    """A Hermes identifier as a mnemo scope id: kept as it is when mnemo accepts it, else replaced by a
    stable hash (so an odd platform id still gets a scope of its own, never the shared default)."""
    if value is None or value == "":
        return ""
    text = value if isinstance(value, str) else str(value)
    try:
        return check_id(text, field)
    except InvalidArgument:
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _guarded(default: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Hermes must never see an exception from a hook: log it with its reason and answer ``default``."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def guarded(self: MnemoMemoryProvider, *args: Any, **kwargs: Any) -> T:
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the host must go on whatever mnemo does
                log.warning("mnemo: %s failed: %s: %s", method.__name__, type(exc).__name__, exc)
                return default

        return guarded

    return wrap


class MnemoMemoryProvider(MemoryProvider):
    """Hermes' ``MemoryProvider`` on mnemo (see the module docstring)."""

    def __init__(self) -> None:
        self._memory: AgentMemory | None = None
        self._off = False  # a session other than a primary one: no memory at all, tools included
        self._memories_dir: Path | None = None  # Hermes' MEMORY.md / USER.md
        self._lock = threading.Lock()
        self._compressions = 0
        self._last_query: str | None = None

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    def is_available(self) -> bool:
        """True: mnemo needs no service or credentials (this module imported, so mnemo is installed)."""
        return True

    # -- session ------------------------------------------------------------------------------

    @_guarded(None)
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Open mnemo's memory for this Hermes session (see the module docstring for where and whose)."""
        self._off = kwargs.get("agent_context", "primary") != "primary"
        if self._off:
            log.info("mnemo: off for this %s session (only primary sessions use memory)", kwargs["agent_context"])
            self.shutdown()
            return
        hermes_home = kwargs.get("hermes_home") or _default_hermes_home()
        home = mnemo_home(hermes_home)
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        settings = load_settings(
            home,
            user_id=scope_id(kwargs.get("user_id"), "user_id"),
            agent_id=scope_id(kwargs.get("agent_identity"), "agent_id"),
        )
        # The curated entries the graph imports once are Hermes' own (mnemo's curated tier is unused here).
        memories = Path(hermes_home) / "memories"
        graph_table = {**settings.providers.get("graph", {}), "memories_dir": str(memories)}
        settings = settings.model_copy(update={"providers": {**settings.providers, "graph": graph_table}})
        memory = AgentMemory(settings=settings)
        try:
            memory.start_session(str(session_id))
            _freeze_hermes_entries(memory, memories)
        except BaseException:
            memory.close()
            raise
        with self._lock:
            previous, self._memory = self._memory, memory
            self._memories_dir = memories
            self._compressions = 0
        if previous is not None:
            previous.close()
        log.info("mnemo: session %s in %s", session_id, home)

    def _session(self) -> AgentMemory | None:
        with self._lock:
            return self._memory

    @_guarded(None)
    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """Follow Hermes to its new session id (resume, branch, compression, reset): the archive records
        the lineage, and a reset re-freezes the bulletin for the fresh conversation."""
        memory = self._session()
        if memory is not None:
            memory.switch_session(str(new_session_id), parent=parent_session_id or None, reset=reset, rewound=rewound)
            if reset and self._memories_dir is not None:
                _freeze_hermes_entries(memory, self._memories_dir)  # Hermes re-read its files for the new prompt

    @_guarded(None)
    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """A real session boundary: extraction over the whole conversation (what compression did not
        already take), then the archive marks the session ended."""
        memory = self._session()
        if memory is None:
            return
        memory.end_session(_plain_messages(messages))

    @_guarded(None)
    def shutdown(self) -> None:
        """Flush and close mnemo's storage; idempotent."""
        with self._lock:
            memory, self._memory = self._memory, None
        if memory is not None:
            memory.close()

    # -- prompt and turns ---------------------------------------------------------------------

    @_guarded("")
    def system_prompt_block(self) -> str:
        """The graph's bulletin, frozen when the session started (byte-identical until a reset)."""
        memory = self._session()
        if memory is None:
            return ""
        return next((text for name, text in memory.prompt_blocks() if name == "bulletin"), "")

    @_guarded("")
    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """Recalled memories (and archive hits) for the coming turn; served from the lookup queued after
        the last turn when there is one. Hermes fences what this returns."""
        memory = self._session()
        if memory is None or not isinstance(query, str) or not query.strip():
            return ""
        return memory.turn_context(query)

    @_guarded(None)
    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Start the next turn's lookup in the background (skipped when :meth:`sync_turn` just did)."""
        memory = self._session()
        with self._lock:
            repeated, self._last_query = self._last_query == query, None
        if memory is not None and isinstance(query, str) and query.strip() and not repeated:
            memory.queue_prefetch(query)

    @_guarded(None)
    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        """Archive the finished turn (with its tool calls when Hermes passes the messages) and start the
        next turn's lookup. Hermes calls this on its background worker, in turn order.

        The results of Hermes' other tools in the turn are reported as untrusted content (see
        :meth:`AgentMemory.report_untrusted`): the model's memory writes from then on wait for review.
        Hermes hands providers a turn's tool results only when the turn is over, so writes made within
        that same turn are judged without them."""
        memory = self._session()
        if memory is None:
            return
        turn = _last_turn(messages) if messages else None
        own = {TOOL_PREFIX + name for name in _EXPOSED_TOOLS}
        for name, content in _tool_results(turn or ()):
            if name not in own:
                memory.report_untrusted(content, source=name)
        memory.turn_complete(str(user_content or ""), str(assistant_content or ""), messages=turn)
        with self._lock:
            self._last_query = user_content

    @_guarded("")
    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """Extract typed memories from the messages about to be summarised; returns them, one per line,
        for the summariser to keep."""
        memory = self._session()
        if memory is None or not messages:
            return ""
        with self._lock:
            self._compressions += 1
            count = self._compressions
        return memory.before_compress(_plain_messages(messages), count, fenced=False)

    @_guarded(None)
    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """Remember what a subagent was asked and what it answered."""
        memory = self._session()
        if memory is not None and isinstance(task, str) and task.strip():
            memory.delegation_complete(task, str(result or ""), str(child_session_id or ""))

    @_guarded(None)
    def on_memory_write(self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None) -> None:
        """Mirror a write of Hermes' built-in ``memory`` tool into the graph (scanned like any write)."""
        memory = self._session()
        if memory is None:
            return
        old_text = (metadata or {}).get("old_text")
        memory.mirror_curated_write(action, target, content, old_text if isinstance(old_text, str) else None)

    # -- tools --------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """mnemo's graph tools and its archive search, as ``mnemo_<name>``."""
        try:
            memory = self._session()
            if self._off:
                return []
            schemas = memory.tools() if memory is not None else _standalone_schemas()
            exposed = []
            for schema in schemas:
                function = schema.get("function", schema)
                if function.get("name") in _EXPOSED_TOOLS:
                    exposed.append({**function, "name": TOOL_PREFIX + function["name"]})
            return exposed
        except Exception as exc:  # noqa: BLE001 - Hermes lists tools while it builds the agent
            log.warning("mnemo: listing tools failed: %s", exc)
            return []

    @_guarded(json.dumps({"success": False, "error": "mnemo is not available for this call (see the log)"}))
    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one of :meth:`get_tool_schemas`' tools; always a JSON string."""
        name = tool_name[len(TOOL_PREFIX) :] if tool_name.startswith(TOOL_PREFIX) else tool_name
        memory = self._session()
        if memory is None:
            return json.dumps({"success": False, "error": "mnemo is off for this session (see the log)"})
        if name not in _EXPOSED_TOOLS:
            return json.dumps({"success": False, "error": f"unknown tool {tool_name!r}"})
        return memory.handle_tool_call(name, args, tool_call_id=kwargs.get("tool_call_id"))

    # -- setup --------------------------------------------------------------------------------

    def get_config_schema(self) -> list[dict[str, Any]]:
        """What ``hermes memory setup`` asks for: a few of mnemo's settings (all optional, none secret)."""
        return [dict(field) for field in CONFIG_FIELDS]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        """Save the answers in mnemo's own ``HERMES_HOME/mnemo/config.toml`` (never Hermes' files).
        Raises ``ConfigError`` naming a bad value, writing nothing (Hermes shows the reason)."""
        known = {field["key"]: field for field in CONFIG_FIELDS}
        chosen = {
            key: _coerce(value, known[key]["default"])
            for key, value in values.items()
            if key in known and value not in (None, "")
        }
        if chosen:
            update_settings(mnemo_home(hermes_home), chosen)

    def backup_paths(self) -> list[str]:
        """Nothing outside ``HERMES_HOME``: mnemo's data is in ``HERMES_HOME/mnemo``, which backups include."""
        return []


def _coerce(value: Any, default: Any) -> Any:
    """A setup answer (often a string) as the type of the setting's default."""
    if isinstance(default, bool) or not isinstance(default, (int, float)) or not isinstance(value, str):
        return value
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{value!r} is not a number") from None
    return int(number) if isinstance(default, int) and number.is_integer() else number


def _default_hermes_home() -> Path:
    from hermes_constants import get_hermes_home  # Hermes' own answer, profiles included

    return Path(get_hermes_home())


def _freeze_hermes_entries(memory: AgentMemory, directory: Path) -> None:
    """Hermes' own curated entries are in its system prompt: per-turn recall leaves them out."""
    graph = next((p for p in memory.registry.providers if isinstance(p, GraphProvider)), None)
    if graph is None:
        return
    entries: list[str] = []
    for filename in _HERMES_MEMORY_FILES:
        try:
            entries += parse_entries(MemoryFile(directory / filename).read_text())
        except UnreadableFile as exc:
            log.warning("mnemo: cannot read Hermes' %s: %s", filename, exc.reason)
    graph.set_frozen_entries(entries)


def _standalone_schemas() -> list[dict[str, Any]]:
    """The tool schemas before a session is open (Hermes may list tools first)."""
    from ..tools.graph import GRAPH_TOOL_SCHEMAS
    from ..tools.session_search import SESSION_SEARCH_TOOL_SCHEMA

    return [*GRAPH_TOOL_SCHEMAS, SESSION_SEARCH_TOOL_SCHEMA]


def _plain_messages(messages: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Hermes' messages as mnemo's hooks take them (dicts only; anything else is skipped)."""
    return [dict(m) for m in messages or () if isinstance(m, Mapping)]


def _tool_results(turn: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Each tool result of a turn as (tool name, text): the name from the message, else from the assistant's
    call it answers."""
    called = tool_call_names(turn)
    results = []
    for message in turn:
        if message.get("role") != "tool":
            continue
        name = message.get("name") or called.get(str(message.get("tool_call_id"))) or "tool"
        content = message.get("content")
        results.append((str(name), content if isinstance(content, str) else json.dumps(content, default=str)))
    return results


def _last_turn(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The finished turn inside Hermes' whole conversation: from its user message to the end."""
    plain = _plain_messages(messages)
    for index in range(len(plain) - 1, -1, -1):
        if plain[index].get("role") == "user":
            return plain[index:]
    return None
