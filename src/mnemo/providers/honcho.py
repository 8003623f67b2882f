"""Honcho (https://honcho.dev) as a :class:`~mnemo.providers.MemoryProvider` named ``"honcho"``.

Honcho keeps peers (the user, the agent) exchanging messages in sessions and reasons over them into a
representation of each peer. This provider, over the ``honcho-ai`` SDK (the optional extra ``honcho``):

- maps mnemo's scope to peers (the user one, the agent another) and each session key to a Honcho session
  holding both, created on first use;
- sends each completed turn to that session as two messages, from the event worker, so a turn never
  waits for Honcho;
- gives, per turn, the user peer's representation curated around the message and its peer card (and the
  agent's, when the agent's notes live only in Honcho), prefetched after each turn; the registry fences
  and scans it like any provider's text and drops it when the deadline passes;
- mirrors curated writes as conclusions: an add (or a replace's new text) becomes a conclusion about the
  target's peer, and a replace or remove deletes that peer's conclusions containing the old text;
- follows Honcho's per-peer memory mode: ``hybrid`` keeps the local curated file as well, ``honcho``
  leaves that peer's target (``user`` for the user peer, ``memory`` for the agent peer) to Honcho alone;
- offers ``honcho_search``, a semantic search over what Honcho concluded about the user.

A gateway serving many sessions passes one shared :class:`honcho.Honcho` client (its workspace included)
to every provider; a provider only closes the connection pool it created itself.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InvalidArgument, excerpt
from ..safety.scan import scan_many
from ..scope import Scope
from ..tools._json import check_required, failure, function_schema, parse_arguments, refusal, success
from .config_schema import ConfigField

if TYPE_CHECKING:
    import httpx
    from honcho import Honcho, Peer, Session

__all__ = ["MEMORY_MODES", "HonchoProvider"]

log = logging.getLogger("mnemo.providers.honcho")

MEMORY_MODES = ("hybrid", "honcho")
_INHERIT = "inherit"

# Honcho's ids (workspace, peer, session): ^[a-zA-Z0-9_-]+$, at most 512 characters (API reference v3,
# WorkspaceCreate / PeerCreate / SessionCreate).
_HONCHO_ID = re.compile(r"^[A-Za-z0-9_-]{1,512}$")
_ID_LIMIT = 512
# MessageCreate.content: maxLength 25000 (API reference v3); longer text goes as several messages.
_MESSAGE_CHARS = 25_000
# ConclusionCreate.content: maxLength 65535 (API reference v3).
_CONCLUSION_CHARS = 65_535
# The search query travels in the URL of GET .../context; the start of a message says what it is about.
_QUERY_CHARS = 512
# Conclusions looked at when a curated replace or remove deletes the old text's conclusions.
_FORGET_CANDIDATES = 20

SEARCH_TOOL = "honcho_search"
SEARCH_SCHEMA = function_schema(
    SEARCH_TOOL,
    "Search what Honcho has concluded about the user (facts, preferences, habits) by meaning. "
    "Returns the matching conclusions, most relevant first.",
    {
        "query": {"type": "string", "description": "What to look for, in plain words."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many (default 10)."},
    },
    ["query"],
)


class HonchoProvider:
    """Honcho behind mnemo's provider contract.

    ``client`` is a ready :class:`honcho.Honcho` to use (and never close), e.g. one shared by every session
    of a gateway; without it the provider builds its own from its config (``base_url``, ``api_key``,
    ``workspace``, ``timeout``). ``scope`` says whose memory this is; ``user_id`` / ``agent_id`` /
    ``channel_id`` in the config override it, and ``user_peer`` / ``agent_peer`` name existing Honcho peers
    outright.
    """

    name = "honcho"

    def __init__(self, *, client: Honcho | None = None, scope: Scope | None = None) -> None:
        self._shared = client
        self._scope = scope or Scope()
        self._client: Honcho | None = None
        self._owned_pool: httpx.Client | None = None
        self._user: Peer | None = None
        self._agent: Peer | None = None
        self._modes = dict.fromkeys(("user", "memory"), "hybrid")
        self._context_conclusions = 10
        self._session_id = ""
        self._session: Session | None = None
        self._channel = ""
        self._lock = threading.Lock()

    # -- set-up -----------------------------------------------------------------------------------

    def is_available(self) -> bool:
        """Whether the ``honcho-ai`` SDK is installed (or a client was given); another package also
        installs a module named ``honcho``, so the distribution is what is checked."""
        if self._shared is not None:
            return True
        try:
            metadata.version("honcho-ai")
        except metadata.PackageNotFoundError:
            return False
        return True

    def config_schema(self) -> list[ConfigField]:
        """What ``mnemo providers setup honcho`` asks for."""
        return [
            ConfigField(
                "base_url", "Honcho's URL (e.g. http://localhost:8000 for a self-hosted server)", required=True
            ),
            ConfigField(
                "api_key", "Honcho API key (leave empty for a server without auth)", secret=True, env="HONCHO_API_KEY"
            ),
            ConfigField("workspace", "Honcho workspace holding mnemo's peers and sessions", default="mnemo"),
            ConfigField(
                "memory_mode",
                "hybrid: curated files and Honcho; honcho: Honcho alone",
                default="hybrid",
                choices=MEMORY_MODES,
            ),
            ConfigField(
                "user_memory_mode",
                "memory mode of the user peer (USER.md)",
                default=_INHERIT,
                choices=(_INHERIT, *MEMORY_MODES),
            ),
            ConfigField(
                "agent_memory_mode",
                "memory mode of the agent peer (MEMORY.md)",
                default=_INHERIT,
                choices=(_INHERIT, *MEMORY_MODES),
            ),
            ConfigField(
                "user_peer", "an existing Honcho peer id for the user (default: from mnemo's user id)", default=""
            ),
            ConfigField(
                "agent_peer", "an existing Honcho peer id for the agent (default: from mnemo's agent id)", default=""
            ),
            ConfigField("context_conclusions", "conclusions per turn, chosen by relevance to the message", default=10),
            ConfigField("timeout", "seconds one request to Honcho may take", default=5.0),
        ]

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        """Work out the peers, the session and the memory modes, and build the client; no request is made."""
        scope = Scope(
            **{**self._scope.as_dict(), **{k: config[k] for k in ("user_id", "agent_id", "channel_id") if k in config}}
        )
        mode = _choice(config, "memory_mode", MEMORY_MODES, "hybrid")
        user_mode = _choice(config, "user_memory_mode", (_INHERIT, *MEMORY_MODES), _INHERIT)
        agent_mode = _choice(config, "agent_memory_mode", (_INHERIT, *MEMORY_MODES), _INHERIT)
        self._modes = {
            "user": mode if user_mode == _INHERIT else user_mode,
            "memory": mode if agent_mode == _INHERIT else agent_mode,
        }
        self._context_conclusions = _integer(config, "context_conclusions", 10, 1, 100)
        user_peer = _peer_name(config, "user_peer") or ("user" if not scope.user_id else "u-" + _encode(scope.user_id))
        agent_peer = _peer_name(config, "agent_peer") or (
            "agent" if not scope.agent_id else "a-" + _encode(scope.agent_id)
        )
        if user_peer == agent_peer:
            raise ConfigError(f"honcho: the user and the agent cannot be the same peer ({user_peer!r})")
        self._client = self._shared if self._shared is not None else self._build_client(config)
        from honcho import Peer

        self._user, self._agent = Peer(_bounded(user_peer), self._client), Peer(_bounded(agent_peer), self._client)
        self._channel = scope.channel_id
        self._rekey(session_key)

    def _build_client(self, config: Mapping[str, Any]) -> Honcho:
        import httpx
        from honcho import Honcho

        base_url = config.get("base_url")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"honcho: base_url must be an http(s) URL, got {excerpt(base_url)}")
        workspace = config.get("workspace", "mnemo")
        if not isinstance(workspace, str) or not _HONCHO_ID.match(workspace):
            raise ConfigError(f"honcho: workspace must match [A-Za-z0-9_-]{{1,512}}, got {excerpt(workspace)}")
        timeout = config.get("timeout", 5.0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
            raise ConfigError(f"honcho: timeout must be a number of seconds in (0, 600], got {excerpt(timeout)}")
        api_key = config.get("api_key") or None
        # The pool is created here so shutdown closes exactly what this provider opened; no retries:
        # a slow server already costs a turn its context, retrying would only hold the worker longer.
        self._owned_pool = httpx.Client(base_url=base_url.rstrip("/"), timeout=httpx.Timeout(float(timeout)))
        return Honcho(
            base_url=base_url, api_key=api_key, workspace_id=workspace, timeout=float(timeout), max_retries=0,
            http_client=self._owned_pool,
        )  # fmt: skip

    def capabilities(self) -> dict[str, Any]:
        """``honcho_search``, and the targets whose peer's memory mode is ``honcho``."""
        return {
            "tool_names": {SEARCH_TOOL},
            "tool_schemas": [SEARCH_SCHEMA],
            "suppresses_local_writes": {target: mode == "honcho" for target, mode in self._modes.items()},
        }

    @property
    def peers(self) -> tuple[str, str]:
        """The ids of the user's and the agent's Honcho peers (after ``initialize``)."""
        return (self._peer("user").id, self._peer("memory").id)

    @property
    def session_id(self) -> str:
        """The Honcho session this mnemo session writes to."""
        return self._session_id

    # -- per turn ---------------------------------------------------------------------------------

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """What Honcho knows of the user that bears on ``user_message``."""
        return self._context(user_message)

    def prefetch(self, query: str) -> str | None:
        """The next turn's context, fetched in the background after the turn whose message was ``query``."""
        return self._context(query)

    def _context(self, query: str) -> str | None:
        search = query.strip()[:_QUERY_CHARS] if isinstance(query, str) else ""
        parts = [_render("the user", self._peer_context(self._peer("user"), search))]
        if self._modes["memory"] == "honcho":
            parts.append(_render("the agent's own notes", self._peer_context(self._peer("memory"), search)))
        text = "\n\n".join(part for part in parts if part)
        return text or None

    def _peer_context(self, peer: Peer, search: str) -> Any:
        # GET /v3/workspaces/{w}/peers/{p}/context: the peer's own representation and card, one request.
        if search:
            return peer.context(
                search_query=search, search_top_k=self._context_conclusions, max_conclusions=self._context_conclusions
            )
        return peer.context(max_conclusions=self._context_conclusions)

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Send the turn to the session as the user's message and the agent's reply."""
        batch = [self._peer("user").message(chunk) for chunk in _chunks(user_message)]
        batch += [self._peer("memory").message(chunk) for chunk in _chunks(assistant_response)]
        if batch:
            self._open_session().add_messages(batch)

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Mirror a curated write as conclusions about the target's peer (``user``: the user, ``memory``: the agent)."""
        if target not in self._modes:
            return
        conclusions = self._peer(target).conclusions
        if action in ("replace", "remove") and old_text and old_text.strip():
            for found in conclusions.query(old_text[:_QUERY_CHARS], top_k=_FORGET_CANDIDATES):
                if old_text in found.content:
                    conclusions.delete(found.id)
        if action in ("add", "replace") and content.strip():
            conclusions.create([{"content": content[:_CONCLUSION_CHARS], "session_id": self._open_session().id}])

    def on_session_switch(self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool) -> None:
        """Later turns go to the Honcho session of ``new_session_id``."""
        self._rekey(new_session_id)

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> str | None:
        """Nothing to add: every turn already reached Honcho when it completed."""
        return None

    # -- tools ------------------------------------------------------------------------------------

    def handle_tool_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Answer ``honcho_search``: ``{"success": true, "results": [{"content", "level", "created_at"}]}``."""
        if name != SEARCH_TOOL:
            return failure(f"unknown tool {excerpt(name)}; this provider serves {SEARCH_TOOL!r}", field="name")
        try:
            args = parse_arguments(arguments, SEARCH_SCHEMA)
            check_required(args, SEARCH_SCHEMA)
            query, limit = args["query"], args.get("limit", 10)
            if not isinstance(query, str) or not query.strip():
                raise InvalidArgument("query", "must be non-empty text")
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
                raise InvalidArgument("limit", "must be an integer from 1 to 50")
        except InvalidArgument as exc:
            return refusal(exc)
        found = self._peer("user").conclusions.query(query[:_QUERY_CHARS], top_k=limit)
        return success(
            results=[{"content": c.content, "level": c.level, "created_at": c.created_at.isoformat()} for c in found]
        )

    # -- end --------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Close the connection pool this provider opened; a client it was given stays open."""
        pool, self._owned_pool = self._owned_pool, None
        if pool is not None:
            try:
                pool.close()
            except Exception:
                log.warning("honcho: closing the HTTP client failed", exc_info=True)

    # -- internals --------------------------------------------------------------------------------

    def _peer(self, target: str) -> Peer:
        peer = self._user if target == "user" else self._agent
        if peer is None:
            raise RuntimeError("the honcho provider is not initialized")
        return peer

    def _rekey(self, session_key: str) -> None:
        with self._lock:
            # The user's peer is part of the id: two users' sessions never meet, even under one key.
            self._session_id = _bounded(
                f"{_encode(self._peer('user').id)}-{_encode(self._channel)}-{_encode(session_key)}"
            )
            self._session = None

    def _open_session(self) -> Session:
        """The current session, got or created on Honcho with both peers the first time it is needed."""
        with self._lock:
            if self._session is not None:
                return self._session
            session_id = self._session_id
        from honcho.api_types import SessionPeerConfig

        assert self._client is not None
        # The user is observed (Honcho reasons about them); the agent observes but is not modelled.
        session = self._client.session(
            session_id,
            peers=[
                (self._peer("user").id, SessionPeerConfig(observe_me=True, observe_others=False)),
                (self._peer("memory").id, SessionPeerConfig(observe_me=False, observe_others=True)),
            ],
        )
        with self._lock:
            if self._session_id == session_id:
                self._session = session
        return session


def _render(whose: str, context: Any) -> str:
    """A peer context (``PeerContext``: representation and card) as text, or ``""``.

    Honcho's text comes from what was said in conversations, so every line is scanned like any memory
    mnemo recalls, and a line with a finding is left out (the registry's fence then keeps the rest inside
    the context block).
    """
    representation = [line.rstrip() for line in (context.representation or "").strip().splitlines()]
    card = [entry.strip() for entry in (context.peer_card or []) if isinstance(entry, str) and entry.strip()]
    checked = [line for line in representation if line.strip() and not line.lstrip().startswith("#")] + card
    flagged = {text for text, findings in zip(checked, scan_many(checked)) if findings}
    if flagged:
        log.warning("honcho: %d line(s) about %s left out: the threat scan flagged them", len(flagged), whose)
    lines = [line for line in representation if line not in flagged]
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        lines = []
    kept_card = [entry for entry in card if entry not in flagged]
    if kept_card:
        lines.append("Peer card:\n" + "\n".join(f"- {entry}" for entry in kept_card))
    return f"What Honcho knows of {whose}:\n" + "\n".join(lines) if lines else ""


def _encode(value: str) -> str:
    """``value`` in Honcho's id alphabet, injectively: letters and digits kept, every other byte ``_xx``.

    The result never holds ``-``, which is then free to separate the parts of an id.
    """
    return "".join(ch if ch.isascii() and ch.isalnum() else "".join(f"_{b:02x}" for b in ch.encode()) for ch in value)


def _bounded(identifier: str) -> str:
    """``identifier``, or a digest of it when it is longer than Honcho allows (``h-`` starts no other id)."""
    if len(identifier) <= _ID_LIMIT:
        return identifier
    return "h-" + hashlib.sha256(identifier.encode()).hexdigest()


def _chunks(text: str) -> list[str]:
    """``text`` in pieces Honcho accepts as messages; blank text gives none."""
    if not isinstance(text, str) or not text.strip():
        return []
    return [text[start : start + _MESSAGE_CHARS] for start in range(0, len(text), _MESSAGE_CHARS)]


def _choice(config: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str) -> str:
    value = config.get(key, default)
    if value not in choices:
        raise ConfigError(f"honcho: {key} must be one of {', '.join(choices)}, got {excerpt(value)}")
    return value


def _integer(config: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"honcho: {key} must be an integer from {low} to {high}, got {excerpt(value)}")
    return value


def _peer_name(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key) or ""
    if value and (not isinstance(value, str) or not _HONCHO_ID.match(value)):
        raise ConfigError(f"honcho: {key} must match [A-Za-z0-9_-]{{1,512}}, got {excerpt(value)}")
    return value
