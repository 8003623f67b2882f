"""The registry: one per AgentMemory, owning every provider's lifecycle and the threading contract.

The agent calls the registry from its own thread; the registry decides where each provider hook runs:

- ``enrich_turn`` runs in parallel on one worker per provider, under one overall deadline. A provider
  that misses it is skipped for the turn, and while its late call is still running it is not called
  again, so a hung backend costs one thread, not one thread per turn.
- ``on_memory_write``, ``on_turn_complete``, and the optional ``on_turn_start`` and ``on_delegation``
  are fire-and-forget on a second worker per provider (daemon), so one provider sees its events in order
  and a slow one never delays the turn.
- The optional ``on_session_switch`` and ``on_session_end`` run on that same event worker, after every
  event of the session they close, and the caller waits for them under a deadline (``enrich_timeout``
  and ``compress_timeout``). A provider still inside one when the deadline passes is not called for
  that hook again until it returns.
- The optional ``prefetch`` runs on the enrich worker, queued by the event worker once the turn's
  ``on_turn_complete`` was delivered; the next ``enrich_turn`` serves its result (waiting at most the
  enrich deadline) instead of calling ``enrich_turn``. A session switch or end drops it.
- ``on_compress`` runs on non-daemon threads joined under one deadline: the agent is about to discard
  those messages, so an interpreter exit waits for the work to finish. Text it returns is collected.
- ``shutdown_all`` delivers each provider's pending events, then shuts it down, all under one deadline.
  It also runs when the registry is garbage-collected or at interpreter exit, through a finalizer that
  holds no reference to the registry.

Every call into a provider is isolated: an exception is logged with the provider's name and goes no
further.

Why one module past 600 lines: every hook's dispatch shares the workers, deadlines and the
one-late-call-at-a-time rule above; split apart, that contract would be spread over modules that must agree
on it (the workers themselves already live in :mod:`._threads`).
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument, MnemoError, excerpt
from ..taint import tool_call_names
from ..tools._json import failure, parse_arguments, refusal
from ._threads import Gather, Lane, join_all
from .protocol import (
    MemoryProvider,
    ProviderCapabilities,
    ProviderError,
    missing_members,
    optional_hooks,
)

__all__ = ["ProviderRegistry"]

log = logging.getLogger("mnemo.providers")

# The curated store's tool; no provider may take its name.
MEMORY_TOOL = "memory"

# Events queued for a provider that stopped consuming them are dropped beyond this many, rather than
# letting one hung backend grow the queue for the rest of the session.
_MAX_PENDING_EVENTS = 1000

# Events every provider receives; any other broadcast goes only to providers defining the hook.
_REQUIRED_EVENTS = frozenset({"on_memory_write", "on_turn_complete"})


@dataclass(eq=False)
class _Prefetch:
    """One background lookup for the next turn; ``done`` is set once ``text`` is final."""

    query: str
    done: threading.Event = field(default_factory=threading.Event)
    text: str | None = None
    # Set when the result will never be served (a switch, a newer turn, a missed deadline): a lookup
    # not yet started is then not started at all.
    dropped: bool = False


@dataclass(eq=False)
class _Active:
    """One provider admitted for the session, with its frozen capabilities and its workers."""

    name: str
    provider: MemoryProvider
    capabilities: ProviderCapabilities
    enrich_lane: Lane
    event_lane: Lane
    hooks: frozenset[str] = frozenset()
    compressing: threading.Thread | None = None
    # Waited-for hooks (switch, end) submitted and not yet returned: a provider stuck in one is not
    # handed another.
    in_flight: set[str] = field(default_factory=set)
    # The prefetch waiting to be served, and the one whose job has not yet left the workers (served,
    # dropped or not).
    prefetched: _Prefetch | None = None
    prefetching: _Prefetch | None = None


@dataclass(eq=False)
class _Session:
    """Everything shutdown needs, kept apart from the registry so the finalizer can hold it alone.

    Shutdown starts no thread: from Python 3.12 none can be started by an exit handler. Each provider
    is closed on its own event worker, started at initialization, which also puts the close after the
    events still queued for it.
    """

    shutdown_timeout: float
    active: list[_Active] = field(default_factory=list)
    # Providers refused after a successful initialize are shut down at once; these threads do it.
    refused: list[threading.Thread] = field(default_factory=list)
    closed: bool = False

    def shutdown(self) -> None:
        """Close every initialized provider within ``shutdown_timeout`` overall; never raises."""
        try:
            self._shutdown()
        except BaseException:  # at exit or in a finalizer there is no caller left to handle it
            log.exception("shutdown of providers failed")

    def _shutdown(self) -> None:
        active, self.active = self.active, []
        self.closed = True
        deadline = time.monotonic() + self.shutdown_timeout
        gather = Gather(len(active))
        for index, entry in enumerate(active):
            job = functools.partial(_close, entry, deadline)
            if not entry.event_lane.submit(job, functools.partial(gather.record, index)):
                gather.record(index, None)
        for entry, (finished, _) in zip(active, gather.collect(deadline)):
            if not finished:
                log.warning("%s: shutdown did not finish within %.1f s; abandoned", entry.name, self.shutdown_timeout)
        for thread in join_all(self.refused, deadline):
            log.warning("%s: shutdown did not finish within %.1f s; abandoned", _owner(thread), self.shutdown_timeout)
        for entry in active:
            entry.enrich_lane.stop()
            entry.event_lane.stop()

    def refuse(self, name: str, provider: MemoryProvider) -> None:
        """Shut down an initialized provider that will not serve this session, without waiting for it."""
        closer = threading.Thread(
            target=_guarded, args=(name, provider, "shutdown", ()), name=f"mnemo-{name}-shutdown", daemon=True
        )
        closer.start()
        self.refused.append(closer)


class ProviderRegistry:
    """The memory providers of one agent session, and the only code that calls them.

    Deadlines are in seconds; ``shutdown_timeout`` bounds the whole shutdown, not each provider.
    ``reserved_tool_names`` are tools the owner serves itself (``memory`` always is): a provider
    declaring one of them is refused.
    """

    def __init__(
        self,
        enrich_timeout: float = 5.0,
        compress_timeout: float = 120.0,
        shutdown_timeout: float = 15.0,
        *,
        reserved_tool_names: Iterable[str] = (),
    ) -> None:
        self._enrich_timeout = _positive("enrich_timeout", enrich_timeout)
        self._compress_timeout = _positive("compress_timeout", compress_timeout)
        self._session = _Session(_positive("shutdown_timeout", shutdown_timeout))
        self._reserved = frozenset(reserved_tool_names) | {MEMORY_TOOL}
        self._registered: list[tuple[str, MemoryProvider]] = []
        self._initialized = False
        self._tools: dict[str, _Active] = {}
        self._by_name: dict[str, _Active] = {}
        self._prefetch_lock = threading.Lock()
        self._failures: dict[str, str] = {}
        # Runs _Session.shutdown at interpreter exit, or when this registry is collected, whichever
        # comes first; calling it (shutdown_all) runs it at most once and unregisters it.
        self._finalizer = weakref.finalize(self, self._session.shutdown)

    # -- setup ---------------------------------------------------------------------------------

    def register(self, provider: MemoryProvider) -> None:
        """Add ``provider`` before initialization; TypeError if it does not conform, ProviderError on a duplicate name."""
        missing = missing_members(provider)
        if missing:
            raise TypeError(f"{type(provider).__name__} is not a MemoryProvider: missing {', '.join(missing)}")
        name = provider.name
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"{type(provider).__name__}.name must be a non-empty string, got {name!r}")
        if self._initialized:
            raise ProviderError(f"cannot register provider {name!r}: the registry is already initialized")
        if any(existing == name for existing, _ in self._registered):
            raise ProviderError(f"a provider named {name!r} is already registered")
        # The name is read once: it keys config, tools and logs for the whole session.
        self._registered.append((name, provider))

    def initialize_all(self, session_key: str, config: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Initialize every registered provider in order on this thread, keeping those that succeed.

        ``config`` maps provider names to their own settings. A provider that is unavailable, raises,
        declares malformed capabilities or a tool name already taken is dropped for the session, with
        its name and the reason in the log.
        """
        if not isinstance(session_key, str) or not session_key:
            raise InvalidArgument("session_key", "must be a non-empty string")
        if self._initialized:
            raise ProviderError("the registry is already initialized")
        if self._session.closed:
            raise ProviderError("the registry is shut down")
        config = {} if config is None else config
        if not isinstance(config, Mapping):
            raise InvalidArgument("config", f"must map provider names to their settings, got {type(config).__name__}")
        for name, _ in self._registered:
            if not isinstance(config.get(name, {}), Mapping):
                raise InvalidArgument(f"config[{name!r}]", f"must be a table of settings, got {type(config[name]).__name__}")
        self._initialized = True
        for name, provider in self._registered:
            if not self._starts(name, provider, session_key, dict(config.get(name, {}))):
                continue
            try:
                capabilities = ProviderCapabilities.from_declared(provider.capabilities())
                self._check_tool_names(capabilities)
            except Exception as exc:
                reason = exc if isinstance(exc, ProviderError) else f"capabilities() failed: {type(exc).__name__}: {exc}"
                log.error("%s: refused: %s", name, reason)
                self._failures[name] = str(reason)
                self._session.refuse(name, provider)
                continue
            entry = _Active(
                name,
                provider,
                capabilities,
                Lane(f"mnemo-{name}-enrich"),
                Lane(f"mnemo-{name}-events"),
                hooks=optional_hooks(provider),
            )
            entry.event_lane.start()
            self._session.active.append(entry)
            self._by_name[name] = entry
            self._tools.update(dict.fromkeys(capabilities.tool_names, entry))
            log.info("%s: active", name)

    def _starts(self, name: str, provider: MemoryProvider, session_key: str, config: dict[str, Any]) -> bool:
        try:
            if not provider.is_available():
                log.info("%s: dropped: not available", name)
                self._failures[name] = "not available"
                return False
            provider.initialize(session_key, config)
        except Exception as exc:
            log.warning("%s: dropped: initialization failed: %s: %s", name, type(exc).__name__, exc, exc_info=True)
            self._failures[name] = str(exc) if isinstance(exc, MnemoError) else f"{type(exc).__name__}: {exc}"
            return False
        return True

    def _check_tool_names(self, capabilities: ProviderCapabilities) -> None:
        for tool in sorted(capabilities.tool_names):
            if tool in self._reserved:
                raise ProviderError(f"tool {tool!r} is reserved by mnemo")
            if tool in self._tools:
                raise ProviderError(f"tool {tool!r} is already served by provider {self._tools[tool].name!r}")

    @property
    def registered(self) -> tuple[tuple[str, MemoryProvider], ...]:
        """Every registered ``(name, provider)``, in registration order, active or not."""
        return tuple(self._registered)

    # -- what is active --------------------------------------------------------------------------

    @property
    def failures(self) -> dict[str, str]:
        """Providers dropped at initialization, by name, with the reason (a copy)."""
        return dict(self._failures)

    @property
    def providers(self) -> tuple[MemoryProvider, ...]:
        """The active providers, in registration order (empty before initialization and after shutdown)."""
        return tuple(entry.provider for entry in self._session.active)

    def capabilities(self, name: str) -> ProviderCapabilities:
        """The frozen capabilities of active provider ``name``; KeyError if there is none."""
        return self._by_name[name].capabilities

    def hooks(self, name: str) -> frozenset[str]:
        """The optional hooks active provider ``name`` defines (see ``OPTIONAL_HOOKS``); KeyError if none."""
        return self._by_name[name].hooks

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Every active provider's tool schemas, in registration order (copies, safe to modify)."""
        return [copy.deepcopy(dict(schema)) for entry in self._session.active for schema in entry.capabilities.tool_schemas]

    def tool_owner(self, tool_name: str) -> str | None:
        """The name of the active provider serving ``tool_name``, or None."""
        entry = self._tools.get(tool_name)
        return entry.name if entry is not None and not self._session.closed else None

    def suppresses_local_writes(self, target: str) -> bool:
        """Whether any active provider takes over local writes to ``target`` (``"memory"`` or ``"user"``)."""
        return any(entry.capabilities.suppresses(target) for entry in self._session.active)

    # -- hooks -----------------------------------------------------------------------------------

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
        """Each provider's context for this turn as ``(name, text)``, in registration order.

        A provider with a prefetch pending from the last turn is served from it instead of being asked.
        Returns within ``enrich_timeout`` (plus scheduling slack) whatever the providers do; blank
        answers, late answers and failures are left out.
        """
        active = self._session.active
        if not active:
            return []
        deadline = time.monotonic() + self._enrich_timeout
        history = tuple(messages)
        asked = []
        served = []
        for entry in active:
            with self._prefetch_lock:
                slot, entry.prefetched = entry.prefetched, None
            if slot is not None:
                served.append((entry, slot))
            elif entry.enrich_lane.pending and not _behind_prefetch(entry):
                log.info("%s: enrich_turn skipped: its previous call is still running", entry.name)
            else:
                asked.append(entry)
        gather = Gather(len(asked))
        for index, entry in enumerate(asked):
            job = functools.partial(_enrich, entry.name, entry.provider, user_message, history)
            if not entry.enrich_lane.submit(job, functools.partial(gather.record, index)):
                gather.record(index, None)
        texts = {}
        for entry, (finished, text) in zip(asked, gather.collect(deadline)):
            if not finished:
                log.warning("%s: enrich_turn missed the %.2f s deadline; skipped this turn", entry.name, self._enrich_timeout)
            elif text:
                texts[entry.name] = text
        for entry, slot in served:
            if not slot.done.wait(max(0.0, deadline - time.monotonic())):
                slot.dropped = True
                log.warning("%s: prefetch missed the %.2f s deadline; skipped this turn", entry.name, self._enrich_timeout)
            elif slot.text:
                texts[entry.name] = slot.text
        return [(entry.name, texts[entry.name]) for entry in active if entry.name in texts]

    def prefetch(self, query: str) -> None:
        """Start each prefetching provider's lookup for the next turn, in the background.

        The lookup is queued behind the provider's pending events (so it sees the turn that just
        completed) and runs on its enrich worker; a provider whose previous lookup or ``enrich_turn``
        is still running is skipped. An unserved earlier prefetch is dropped.
        """
        for entry in self._session.active:
            if "prefetch" not in entry.hooks:
                continue
            with self._prefetch_lock:
                _drop(entry.prefetched)
                entry.prefetched = None
                finishing = entry.prefetching is not None and entry.prefetching.done.is_set()
                if entry.enrich_lane.pending and not (finishing and entry.enrich_lane.pending == 1):
                    log.info("%s: prefetch skipped: its previous call is still running", entry.name)
                    continue
                slot = entry.prefetched = entry.prefetching = _Prefetch(query)
            if not entry.event_lane.submit(functools.partial(_queue_prefetch, entry, slot), limit=_MAX_PENDING_EVENTS):
                log.warning("%s: prefetch dropped: the provider is not keeping up or is shut down", entry.name)
                self._drop_prefetch(entry)

    def _drop_prefetch(self, entry: _Active) -> None:
        with self._prefetch_lock:
            _drop(entry.prefetched)
            entry.prefetched = None

    def on_turn_start(self, turn_number: int, message: str) -> None:
        """Tell the providers defining ``on_turn_start`` that turn ``turn_number`` begins, in the background."""
        self._broadcast("on_turn_start", (turn_number, message))

    def on_delegation(self, task: str, result: str, child_session_id: str) -> None:
        """Tell the providers defining ``on_delegation`` that a subagent finished, in the background."""
        self._broadcast("on_delegation", (task, result, child_session_id))

    def on_session_switch(
        self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool
    ) -> None:
        """Re-key every provider defining ``on_session_switch`` for ``new_session_id``; drops prefetches.

        Delivered after each provider's pending events; waits up to ``enrich_timeout`` overall.
        """
        for entry in self._session.active:
            self._drop_prefetch(entry)
        args = (new_session_id, parent_session_id, reset, rewound)
        self._await_events("on_session_switch", lambda: args, self._enrich_timeout)

    def on_session_end(self, messages: Sequence[Any]) -> None:
        """A session ends: every provider defining ``on_session_end`` gets the normalised messages after
        its pending events; waits up to ``compress_timeout`` overall. Drops prefetches."""
        for entry in self._session.active:
            self._drop_prefetch(entry)
        normalised = _normalise_all(messages)
        self._await_events(
            "on_session_end", lambda: ([dict(message) for message in normalised],), self._compress_timeout
        )

    def _await_events(self, hook: str, make_args: Callable[[], tuple[Any, ...]], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        asked = []
        for entry in self._session.active:
            if hook not in entry.hooks:
                continue
            if hook in entry.in_flight:
                log.warning("%s: %s skipped: its previous call is still running", entry.name, hook)
                continue
            asked.append(entry)
        gather = Gather(len(asked))
        for index, entry in enumerate(asked):
            entry.in_flight.add(hook)
            job = functools.partial(_guarded, entry.name, entry.provider, hook, make_args())
            if not entry.event_lane.submit(job, functools.partial(_returned, entry, hook, gather, index)):
                _returned(entry, hook, gather, index, None)
        for entry, (finished, _) in zip(asked, gather.collect(deadline)):
            if not finished:
                log.warning("%s: %s still running after %.1f s; not waiting", entry.name, hook, timeout)

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Tell every provider about one memory-tool operation, in the background."""
        self._broadcast("on_memory_write", (action, target, content, old_text))

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Tell every provider a turn completed successfully, in the background."""
        self._broadcast("on_turn_complete", (user_message, assistant_response))

    def _broadcast(self, hook: str, args: tuple[Any, ...]) -> None:
        for entry in self._session.active:
            if hook not in entry.hooks and hook not in _REQUIRED_EVENTS:
                continue
            job = functools.partial(_guarded, entry.name, entry.provider, hook, args)
            if not entry.event_lane.submit(job, limit=_MAX_PENDING_EVENTS):
                log.warning("%s: %s dropped: the provider is not keeping up or is shut down", entry.name, hook)

    def on_compress(self, messages: Sequence[Any], compression_count: int) -> list[tuple[str, str]]:
        """Show every provider the messages about to be discarded; wait for them up to ``compress_timeout``.

        Messages are normalised to ``{"role", "content": str}``. A provider whose previous
        ``on_compress`` is still running is skipped. Returns the text providers returned, as
        ``(name, text)`` in registration order (blank, late and non-text answers left out).
        """
        active = self._session.active
        if not active:
            return []
        normalised = _normalise_all(messages)
        asked = []
        for entry in active:
            if entry.compressing is not None and entry.compressing.is_alive():
                log.warning("%s: on_compress skipped: its previous call is still running", entry.name)
                continue
            asked.append(entry)
        gather = Gather(len(asked))
        for index, entry in enumerate(asked):
            copies = [dict(message) for message in normalised]
            entry.compressing = threading.Thread(
                target=_answer,
                args=(entry.name, entry.provider, "on_compress", (copies, compression_count), gather, index),
                name=f"mnemo-{entry.name}-compress",
            )
            entry.compressing.start()
        threads = [entry.compressing for entry in asked if entry.compressing is not None]
        for thread in join_all(threads, time.monotonic() + self._compress_timeout):
            log.warning("%s: on_compress still running after %.1f s; not waiting", _owner(thread), self._compress_timeout)
        return [
            (entry.name, text)
            for entry, (finished, text) in zip(asked, gather.collect(time.monotonic()))
            if finished and text
        ]

    def handle_tool_call(self, name: str, arguments: Any) -> str:
        """Run provider tool ``name``; ``arguments`` is a dict or a JSON object string. Always a JSON string."""
        entry = self._tools.get(name)
        if entry is None or self._session.closed:
            return failure(f"unknown tool {excerpt(name)}")
        try:
            parsed = parse_arguments(arguments)
        except InvalidArgument as exc:
            return refusal(exc)
        try:
            result = entry.provider.handle_tool_call(name, parsed)
        except Exception as exc:
            log.warning("%s: tool %s failed: %s: %s", entry.name, name, type(exc).__name__, exc, exc_info=True)
            return failure(f"provider {entry.name!r} failed in tool {name!r}: {type(exc).__name__}: {exc}")
        if not isinstance(result, str):
            log.warning("%s: tool %s returned %s instead of a JSON string", entry.name, name, type(result).__name__)
            return failure(f"provider {entry.name!r} returned no JSON result from tool {name!r}")
        return result

    def shutdown_all(self) -> None:
        """Flush and shut down every provider within ``shutdown_timeout`` overall; idempotent; never raises."""
        self._finalizer()


def _positive(field_name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidArgument(field_name, f"must be a positive number of seconds, got {value!r}")
    return float(value)


def _guarded(name: str, provider: MemoryProvider, hook: str, args: tuple[Any, ...]) -> Any:
    """Call ``provider.hook(*args)``; an exception is logged with the provider's name and swallowed."""
    try:
        return getattr(provider, hook)(*args)
    except Exception as exc:
        log.warning("%s: %s failed: %s: %s", name, hook, type(exc).__name__, exc, exc_info=True)
        return None


def _enrich(name: str, provider: MemoryProvider, user_message: str, history: tuple[Any, ...]) -> str | None:
    return _text(name, "enrich_turn", _guarded(name, provider, "enrich_turn", (user_message, history)))


def _text(name: str, hook: str, value: Any) -> str | None:
    """A hook's answer as stripped text, or None (a non-text answer is logged and ignored)."""
    if value is None:
        return None
    if not isinstance(value, str):
        log.warning("%s: %s returned %s instead of text; ignored", name, hook, type(value).__name__)
        return None
    return value.strip() or None


def _answer(name: str, provider: MemoryProvider, hook: str, args: tuple[Any, ...], gather: Gather, index: int) -> None:
    gather.record(index, _text(name, hook, _guarded(name, provider, hook, args)))


def _returned(entry: _Active, hook: str, gather: Gather, index: int, result: Any) -> None:
    entry.in_flight.discard(hook)
    gather.record(index, result)


def _behind_prefetch(entry: _Active) -> bool:
    """Whether the one job keeping the enrich worker busy is a prefetch (dropped, or served and just
    finishing): the turn's ``enrich_turn`` then queues behind it under the same deadline rather than
    being skipped, since the provider is not known to be stuck. A second job queued behind a stuck
    prefetch makes two, and from then on the provider is skipped."""
    return entry.prefetching is not None and entry.enrich_lane.pending == 1


def _prefetch_left(entry: _Active, slot: _Prefetch, _result: Any = None) -> None:
    """The prefetch job of ``slot`` left the enrich worker (or never reached it)."""
    if entry.prefetching is slot:
        entry.prefetching = None


def _drop(slot: _Prefetch | None) -> None:
    if slot is not None:
        slot.dropped = True


def _queue_prefetch(entry: _Active, slot: _Prefetch) -> None:
    """On the event worker, after the turn's events: hand the lookup to the enrich worker."""
    job = functools.partial(_run_prefetch, entry.name, entry.provider, slot)
    if slot.dropped or not entry.enrich_lane.submit(job, functools.partial(_prefetch_left, entry, slot)):
        slot.done.set()
        _prefetch_left(entry, slot)


def _run_prefetch(name: str, provider: MemoryProvider, slot: _Prefetch) -> None:
    try:
        if not slot.dropped:
            slot.text = _text(name, "prefetch", _guarded(name, provider, "prefetch", (slot.query,)))
    finally:
        slot.done.set()


def _close(entry: _Active, deadline: float) -> None:
    """Runs on the provider's event worker, so every event queued before it has been delivered."""
    if entry.compressing is not None:
        entry.compressing.join(max(0.0, deadline - time.monotonic()))
    _guarded(entry.name, entry.provider, "shutdown", ())


def _owner(thread: threading.Thread) -> str:
    """The provider name inside a ``mnemo-<name>-<purpose>`` thread name."""
    return thread.name.removeprefix("mnemo-").rpartition("-")[0]


def _normalise(message: Any) -> dict[str, str]:
    """``{"role", "content": str}`` from a chat message dict (or SDK object) with any content shape, and
    its ``name`` when it has one (a speaker, or the tool that produced a tool result)."""
    if isinstance(message, Mapping):
        role, content, name = message.get("role"), message.get("content"), message.get("name")
    else:
        role, content, name = (getattr(message, key, None) for key in ("role", "content", "name"))
    plain = {"role": "" if role is None else str(role), "content": message_text(content)}
    if isinstance(name, str) and name:
        plain["name"] = name
    return plain


def _normalise_all(messages: Sequence[Any]) -> list[dict[str, str]]:
    """:func:`_normalise` of each message; a tool result without a name is named after the call it answers
    (providers judge a tool's output by its tool: see :mod:`mnemo.graph.extraction`)."""
    called = tool_call_names(messages)
    plain = []
    for message in messages:
        normal = _normalise(message)
        tool = called.get(str(message.get("tool_call_id"))) if isinstance(message, Mapping) else None
        if normal["role"] == "tool" and "name" not in normal and isinstance(tool, str):
            normal["name"] = tool
        plain.append(normal)
    return plain


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string as it is, the text parts of multipart content
    joined by newlines (images and the like skipped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        # Multipart content (OpenAI / Anthropic): keep the text parts, skip images and the like.
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return str(content)
