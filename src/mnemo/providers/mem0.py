"""Mem0 as a :class:`~mnemo.providers.MemoryProvider` named ``"mem0"``, over the ``mem0ai`` package.

Either backend Mem0 offers: its local ``Memory`` (the user's own LLM, embedder and vector store; by default
an OpenAI-compatible endpoint and an on-disk Qdrant under ``MNEMO_HOME/mem0``) or its hosted
``MemoryClient`` (an API key). Each completed turn is added to Mem0 (on the registry's event worker, so
never on the turn's path); per-turn context is a Mem0 search for the user's message, prefetched after each
turn; ``USER.md`` writes are mirrored as adds; Mem0's operations are tools of their own (``mem0_search``,
``mem0_add``, ``mem0_get_all``, ``mem0_delete``).

Whose memories these are comes from mnemo's scope: Mem0's ``user_id`` is mnemo's user, its ``agent_id``
mnemo's agent (with the channel, when there is one), its ``run_id`` the session. Every search, listing and
deletion is confined to the user and agent, so two users never see each other's memories, whatever the
model asks. Ids are escaped so that no two scopes share one (see :func:`entity_id`).

Mem0's telemetry (PostHog) is turned off before ``mem0`` is first imported (``MEM0_TELEMETRY=false``,
unless the environment already says otherwise), and its files go under ``MNEMO_HOME/mem0``: nothing
reaches the network but the endpoints configured.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InvalidArgument, check_text
from ..scope import Scope
from ..tools._json import check_required, failure, function_schema, refusal, success
from .config_schema import ConfigField

__all__ = ["MEM0_TOOL_NAMES", "Mem0Provider", "entity_id"]

log = logging.getLogger("mnemo.providers.mem0")

DEFAULT_CONTEXT_RESULTS = 5
DEFAULT_CONTEXT_CHARS = 1500
MAX_RESULTS = 100
# The metadata mnemo stamps on what it adds, so a memory's origin shows in Mem0's own tools.
_SOURCE = "mnemo"

_SEARCH, _ADD, _GET_ALL, _DELETE = "mem0_search", "mem0_add", "mem0_get_all", "mem0_delete"
MEM0_TOOL_NAMES = frozenset({_SEARCH, _ADD, _GET_ALL, _DELETE})

_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "At most this many memories."}
_TOOL_SCHEMAS = (
    function_schema(
        _SEARCH,
        "Search Mem0's memories of this user for what is relevant to a query (most relevant first).",
        {"query": {"type": "string", "description": "What to look for."}, "limit": _LIMIT},
        ["query"],
    ),
    function_schema(
        _ADD,
        "Tell Mem0 something worth remembering about this user; it extracts and stores the facts.",
        {"content": {"type": "string", "description": "The text to remember."}},
        ["content"],
    ),
    function_schema(_GET_ALL, "List Mem0's memories of this user.", {"limit": _LIMIT}, []),
    function_schema(
        _DELETE,
        "Delete one of this user's Mem0 memories by its id (from mem0_search or mem0_get_all).",
        {"memory_id": {"type": "string", "description": "The memory's id."}},
        ["memory_id"],
    ),
)

# Characters a Mem0 id cannot hold (whitespace) or that the escaping itself uses.
_UNSAFE = re.compile(r"[%~\s]")
_EMPTY_ID = "~"


def entity_id(value: str) -> str:
    """``value`` (a mnemo scope id or session key) as a Mem0 entity id: ``%``, ``~`` and whitespace become
    ``%xx``; the empty id (mnemo's default scope) becomes ``~``, which no other id escapes to."""
    if not value:
        return _EMPTY_ID
    return _UNSAFE.sub(lambda match: "".join(f"%{byte:02x}" for byte in match.group().encode()), value)


def _agent_entity(scope: Scope) -> str:
    """The agent and, when there is one, the channel as one Mem0 ``agent_id``: ``agent~channel``. Neither
    part holds a bare ``~`` unless it is the empty one, so no two (agent, channel) pairs share an id."""
    agent = entity_id(scope.agent_id)
    return agent if not scope.channel_id else f"{agent}~{entity_id(scope.channel_id)}"


def _import_mem0(home: Path | None) -> Any:
    """``mem0``, with its telemetry off and its files in ``home``, unless the environment says otherwise.

    Mem0 reads ``MEM0_TELEMETRY`` once, at import; when something imported it before mnemo could set the
    variable, the flag its modules kept is turned off too, so only an explicit ``MEM0_TELEMETRY=true``
    lets it report.
    """
    os.environ.setdefault("MEM0_TELEMETRY", "false")
    if home is not None:
        os.environ.setdefault("MEM0_DIR", str(home / "mem0"))
    import mem0

    if os.environ["MEM0_TELEMETRY"].strip().lower() not in ("true", "1", "yes"):
        for module in ("mem0.memory.telemetry", "mem0.memory.main"):
            if getattr(sys.modules.get(module), "MEM0_TELEMETRY", False):
                sys.modules[module].MEM0_TELEMETRY = False
    return mem0


class _SharedMemories:
    """One local ``Memory`` per configuration in this process, shared by every session using it.

    A local Qdrant admits one client per directory, so two sessions of one process (two users of a gateway)
    must share it; the last session to let go closes it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Any, int]] = {}

    def acquire(self, mem0: Any, config: dict[str, Any], timeout: float) -> tuple[str, Any]:
        """The Memory for ``config`` and its key; the first session to ask opens it, with ``timeout`` per model call."""
        key = json.dumps(config, sort_keys=True)
        with self._lock:
            memory, users = self._open.get(key, (None, 0))
            if memory is None:
                memory = mem0.Memory.from_config(config)
                _serialize_stores(memory)
                _bound_model_calls(memory, timeout)
            self._open[key] = (memory, users + 1)
            return key, memory

    def release(self, key: str) -> None:
        """One session lets go of the Memory under ``key``; the last one closes it."""
        with self._lock:
            memory, users = self._open.pop(key, (None, 0))
            if users > 1:
                self._open[key] = (memory, users - 1)
            elif memory is not None:
                memory.close()


_SHARED = _SharedMemories()


def _serialize_stores(memory: Any) -> None:
    """Make a shared Memory's vector stores take one call at a time.

    Sessions share the Memory and each calls it from several threads (adds on the event worker, searches on
    the enrich worker, tools on the agent's). An embedded store such as local Qdrant keeps its points in
    plain Python structures with no lock of its own, so two concurrent upserts could pair one memory's
    vector with another's payload (another user's id). Only the store's calls hold the lock, never the
    model calls around them, so a slow LLM does not hold up the other sessions' searches.
    """
    lock = threading.RLock()
    for store in {id(s): s for s in (memory.vector_store, memory.entity_store)}.values():
        for name in dir(type(store)):
            method = getattr(store, name, None) if not name.startswith("_") else None
            if inspect.ismethod(method):
                setattr(store, name, _holding(lock, method))


def _holding(lock: threading.RLock, method: Any) -> Any:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return method(*args, **kwargs)

    return call


class Mem0Provider:
    """Mem0 behind mnemo's provider contract.

    Give it a ready ``mem0.Memory`` or ``mem0.MemoryClient`` (borrowed: :meth:`shutdown` leaves it open), or
    let :meth:`initialize` build one from the settings of :meth:`config_schema` (``mnemo providers setup
    mem0``). ``context_results`` memories at most, within ``context_chars``, make the per-turn context.
    """

    name = "mem0"

    def __init__(
        self,
        backend: Any = None,
        *,
        context_results: int = DEFAULT_CONTEXT_RESULTS,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
        infer: bool = True,
    ) -> None:
        self._backend = backend
        self._hosted = backend is not None and not hasattr(backend, "vector_store")
        self._shared_key: str | None = None
        self._owned_client: Any = None
        self.context_results = context_results
        self.context_chars = context_chars
        self.infer = infer
        self._user = self._agent = self._run = ""

    # -- setup --------------------------------------------------------------------------------------

    def config_schema(self) -> list[ConfigField]:
        """The settings ``mnemo providers setup mem0`` asks for; API keys are secrets, kept in ``.env``."""
        return [
            ConfigField("mode", "local: Mem0's Memory with your own models and store; hosted: the Mem0 platform",
                        default="local", choices=("local", "hosted")),
            ConfigField("api_key", "hosted: the Mem0 platform API key", secret=True),
            ConfigField("host", "hosted: the platform's URL (empty: Mem0's)", default=""),
            ConfigField("llm_provider", "local: Mem0's LLM provider (openai covers any OpenAI-compatible server)",
                        default="openai"),
            ConfigField("llm_model", "local: the model that extracts memories (empty: Mem0's default)", default=""),
            ConfigField("llm_base_url", "local: the LLM endpoint, e.g. http://localhost:11434/v1 (empty: OpenAI's)",
                        default=""),
            ConfigField("llm_api_key", "local: the LLM endpoint's API key", secret=True),
            ConfigField("embedder_provider", "local: Mem0's embedder provider", default="openai"),
            ConfigField("embedder_model", "local: the embedding model (empty: Mem0's default)", default=""),
            ConfigField("embedder_base_url", "local: the embeddings endpoint (empty: the LLM's)", default=""),
            ConfigField("embedder_api_key", "local: the embeddings endpoint's key (empty: the LLM's)", secret=True),
            ConfigField("embedding_dims", "local: the embedding model's dimensions", default=1536),
            ConfigField("vector_path", "local: the on-disk Qdrant directory (empty: MNEMO_HOME/mem0/qdrant)",
                        default=""),
            ConfigField("config_file", "local: a JSON file with Mem0's whole Memory config, used instead of the "
                        "settings above (any vector store Mem0 supports)", default=""),
            ConfigField("context_results", "memories added to each turn at most", default=DEFAULT_CONTEXT_RESULTS),
            ConfigField("infer", "let Mem0's LLM extract facts from each turn (false: store the turn as it is)",
                        default=True),
            ConfigField("timeout", "seconds one call to Mem0's LLM, embedder or platform may take", default=30.0),
        ]

    def is_available(self) -> bool:
        """Whether ``mem0ai`` is installed (nothing is imported)."""
        return self._backend is not None or importlib.util.find_spec("mem0") is not None

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        """Key this session by mnemo's scope and open the backend (unless one was given).

        ``config`` is what :meth:`config_schema` declares, plus mnemo's ``home`` and scope ids. Raises
        :class:`~mnemo.errors.ConfigError` naming a bad or missing setting.
        """
        scope = Scope(**{key: str(config.get(key) or "") for key in ("user_id", "agent_id", "channel_id")})
        self._user, self._agent, self._run = entity_id(scope.user_id), _agent_entity(scope), entity_id(session_key)
        if "context_results" in config:
            self.context_results = _positive_int(config["context_results"], "context_results")
        if "infer" in config:
            if not isinstance(config["infer"], bool):
                raise ConfigError(f"mem0: infer must be true or false, got {config['infer']!r}")
            self.infer = config["infer"]
        if self._backend is not None:
            return
        timeout = config.get("timeout", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ConfigError(f"mem0: timeout must be a positive number of seconds, got {timeout!r}")
        mode = config.get("mode", "local")
        if mode not in ("local", "hosted"):
            raise ConfigError(f"mem0: mode must be local or hosted, got {mode!r}")
        home = Path(config["home"]) if config.get("home") else None
        mem0 = _import_mem0(home)
        if mode == "hosted":
            self._backend = self._owned_client = _hosted_client(mem0, config, timeout)
            self._hosted = True
            return
        self._shared_key, self._backend = _SHARED.acquire(mem0, _local_config(config, home), timeout)

    def capabilities(self) -> Mapping[str, Any]:
        """Mem0's four tools; local writes are kept too (Mem0 sits beside mnemo's memory, not instead of it)."""
        return {"tool_names": MEM0_TOOL_NAMES, "tool_schemas": list(_TOOL_SCHEMAS)}

    # -- per turn -----------------------------------------------------------------------------------

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """The memories Mem0 finds for ``user_message``, one per line (the registry fences and scans them)."""
        return self._context(user_message)

    def prefetch(self, query: str) -> str | None:
        """The next turn's context, looked up in the background after the turn whose user message is ``query``."""
        return self._context(query)

    def _context(self, query: str) -> str | None:
        if not query.strip():
            return None
        lines, used = [], 0
        for found in self._search(query, self.context_results):
            line = f"- {found['memory']}"
            if used + len(line) > self.context_chars:
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines) or None

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Add the turn to Mem0 (on the registry's event worker: the turn has already returned)."""
        messages = [{"role": "user", "content": user_message}]
        if assistant_response.strip():
            messages.append({"role": "assistant", "content": assistant_response})
        self._add(messages, infer=self.infer, kind="turn")

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Mirror what is added to ``USER.md`` (an add, or the new text of a replace) as a Mem0 memory, verbatim."""
        if target == "user" and action in ("add", "replace") and content.strip():
            self._add([{"role": "user", "content": content}], infer=False, kind=f"USER.md {action}")

    def on_session_switch(self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool) -> None:
        """Later adds carry the new session as their ``run_id``."""
        self._run = entity_id(new_session_id)

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> str | None:
        """Nothing: every turn already reached Mem0 when it completed."""
        return None

    # -- tools --------------------------------------------------------------------------------------

    def handle_tool_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one of Mem0's tools within this session's scope; a JSON result."""
        schema = next((s for s in _TOOL_SCHEMAS if s["function"]["name"] == name), None)
        if schema is None:
            return failure(f"provider 'mem0' has no tool {name!r}")
        try:
            check_required(arguments, schema)
            if name == _SEARCH:
                query = _text(arguments, "query")
                return success(results=[_shown(m) for m in self._search(query, _limit(arguments))])
            if name == _ADD:
                added = self._add([{"role": "user", "content": _text(arguments, "content")}], infer=self.infer, kind="tool")
                # The platform adds in the background: it answers with the event that tracks the add.
                queued = {key: added[key] for key in ("status", "event_id") if isinstance(added, Mapping) and key in added}
                return success(results=[_shown(m) for m in _memories(added)], **queued)
            if name == _GET_ALL:
                return success(results=[_shown(m) for m in self._list(_limit(arguments))])
            return self._delete(_text(arguments, "memory_id"))
        except InvalidArgument as exc:
            return refusal(exc)

    # -- Mem0 calls, all confined to the scope -------------------------------------------------------

    def _filters(self) -> dict[str, Any]:
        if self._hosted:
            return {"AND": [{"user_id": self._user}, {"agent_id": self._agent}]}
        return {"user_id": self._user, "agent_id": self._agent}

    def _search(self, query: str, limit: int) -> list[dict[str, Any]]:
        return _memories(self._backend.search(query, filters=self._filters(), top_k=limit))

    def _list(self, limit: int) -> list[dict[str, Any]]:
        if self._hosted:
            return _memories(self._backend.get_all(filters=self._filters(), page_size=limit))[:limit]
        return _memories(self._backend.get_all(filters=self._filters(), top_k=limit))

    def _add(self, messages: list[dict[str, str]], *, infer: bool, kind: str) -> Any:
        return self._backend.add(
            messages,
            user_id=self._user,
            agent_id=self._agent,
            run_id=self._run,
            metadata={"source": _SOURCE, "kind": kind},
            infer=infer,
        )

    def _delete(self, memory_id: str) -> str:
        # The id comes from the model: it is deleted only if it is one of this scope's memories, so no
        # id, guessed or leaked, reaches another user's.
        try:
            found = self._backend.get(memory_id)
        except Exception:
            found = None
        if not isinstance(found, Mapping) or found.get("user_id") != self._user or found.get("agent_id") != self._agent:
            return failure(f"no memory {memory_id!r} among this user's Mem0 memories")
        self._backend.delete(memory_id)
        return success(deleted=memory_id)

    def shutdown(self) -> None:
        """Let go of the backend this provider opened (a shared local Memory closes with its last user)."""
        key, self._shared_key = self._shared_key, None
        client, self._owned_client = self._owned_client, None
        try:
            if key is not None:
                _SHARED.release(key)
                self._backend = None
            if client is not None:
                client.client.close()
                self._backend = None
        except Exception as exc:
            log.warning("mem0: closing failed: %s: %s", type(exc).__name__, exc)


def _local_config(config: Mapping[str, Any], home: Path | None) -> dict[str, Any]:
    """Mem0's ``Memory.from_config`` dict: the ``config_file`` as it is, else one built from the settings."""
    if config.get("config_file"):
        path = Path(str(config["config_file"])).expanduser()
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"mem0: cannot read config_file {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"mem0: config_file {path} must hold a JSON object")
        return loaded
    if home is None and not config.get("vector_path"):
        raise ConfigError("mem0: set vector_path (or run inside a mnemo home) for the local store")
    base = Path(home) / "mem0" if home is not None else None
    dims = _positive_int(config.get("embedding_dims", 1536), "embedding_dims")
    llm = _model_config(config.get("llm_model"), config.get("llm_base_url"), config.get("llm_api_key"))
    embedder = _model_config(
        config.get("embedder_model"),
        config.get("embedder_base_url") or config.get("llm_base_url"),
        config.get("embedder_api_key") or config.get("llm_api_key"),
    )
    embedder["embedding_dims"] = dims
    vector_path = str(config.get("vector_path") or (base / "qdrant"))  # type: ignore[operator]
    local: dict[str, Any] = {
        "llm": {"provider": config.get("llm_provider") or "openai", "config": llm},
        "embedder": {"provider": config.get("embedder_provider") or "openai", "config": embedder},
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": vector_path, "on_disk": True, "embedding_model_dims": dims, "collection_name": "mnemo"},
        },
    }
    if base is not None:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        local["history_db_path"] = str(base / "history.db")
    return local


def _model_config(model: Any, base_url: Any, api_key: Any) -> dict[str, Any]:
    settings = {"model": model, "openai_base_url": base_url, "api_key": api_key}
    return {key: value for key, value in settings.items() if value}


def _hosted_client(mem0: Any, config: Mapping[str, Any], timeout: float) -> Any:
    api_key = config.get("api_key")
    if not api_key:
        raise ConfigError("mem0: hosted mode needs api_key (mnemo providers setup mem0)")
    import httpx

    try:
        return mem0.MemoryClient(api_key=api_key, host=config.get("host") or None, client=httpx.Client(timeout=timeout))
    except ValueError as exc:
        raise ConfigError(f"mem0: the platform refused the API key: {exc}") from exc


def _bound_model_calls(memory: Any, timeout: float) -> None:
    """Give the OpenAI clients of a local Memory a timeout and one retry (the SDK's default waits 10 minutes
    three times), so a hung endpoint frees the provider's worker instead of holding it all session."""
    for part in (getattr(memory, "llm", None), getattr(memory, "embedding_model", None)):
        client = getattr(part, "client", None)
        if client is not None and hasattr(client, "with_options"):
            part.client = client.with_options(timeout=timeout, max_retries=1)


def _memories(result: Any) -> list[dict[str, Any]]:
    """The memories in a Mem0 answer: ``{"results": [...]}`` or, from older platform APIs, a bare list."""
    items = result.get("results", []) if isinstance(result, Mapping) else result
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, Mapping) and isinstance(item.get("memory"), str)]


def _shown(memory: Mapping[str, Any]) -> dict[str, Any]:
    """What a tool result says of one memory."""
    keys = ("id", "memory", "score", "event", "created_at", "updated_at")
    return {key: memory[key] for key in keys if memory.get(key) is not None}


def _text(arguments: Mapping[str, Any], field: str) -> str:
    value = arguments.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(field, "must be non-empty text")
    return check_text(field, value)


def _limit(arguments: Mapping[str, Any]) -> int:
    value = arguments.get("limit", DEFAULT_CONTEXT_RESULTS * 2)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RESULTS:
        raise InvalidArgument("limit", f"must be an integer from 1 to {MAX_RESULTS}")
    return value


def _positive_int(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"mem0: {field} must be a positive integer, got {value!r}")
    return value
