"""The contract every memory provider meets, and the frozen form of what it declares.

:class:`MemoryProvider` is structural: a third-party client conforms through a thin adapter that has
the right members, without inheriting anything. :class:`BaseProvider` is only a convenience for
providers written for mnemo, supplying a harmless default for every hook.

Threading is the registry's job, never the provider's: the registry decides which thread calls which
hook and how long it waits, so a provider is written as plain synchronous code.

Beyond the minimal protocol, :class:`LifecycleHooks` lists the optional hooks a provider may also
define (session end and switch, delegation, turn start, prefetch, a configuration schema). The registry
looks for each one once, at initialization, and calls only those present.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ..errors import MnemoError
from ..tools._json import failure

__all__ = [
    "OPTIONAL_HOOKS",
    "BaseProvider",
    "LifecycleHooks",
    "MemoryProvider",
    "ProviderCapabilities",
    "ProviderError",
    "missing_members",
    "optional_hooks",
]

# The memory tool's targets; ``suppresses_local_writes`` is normalised to exactly these keys.
WRITE_TARGETS = ("memory", "user")

# OpenAI rejects the whole request when one function name breaks this rule, so a provider
# declaring such a name would take every other tool down with it.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_CAPABILITY_KEYS = frozenset({"tool_names", "tool_schemas", "suppresses_local_writes"})


class ProviderError(MnemoError, ValueError):
    """A provider was refused: duplicate name, bad declared capabilities, or misuse of the registry."""


@runtime_checkable
class MemoryProvider(Protocol):
    """A memory backend the agent consults each turn and keeps informed of what happens.

    Lifecycle: ``is_available`` then ``initialize`` once per session, then ``capabilities`` is read
    once and frozen; the hooks run during the session; ``shutdown`` ends it.
    """

    @property
    def name(self) -> str:
        """Unique id: the config key, the log label and the de-duplication key."""
        ...

    def is_available(self) -> bool:
        """Whether the provider is installed and minimally configured; cheap, no network, no subprocess."""
        ...

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        """Prepare for one session; raising drops this provider for the session. ``config`` is the
        provider's table (see :mod:`mnemo.providers.configuration`) with the session's scope set in it:
        ``user_id``, ``agent_id`` and ``channel_id`` say whose memory this session is, and ``home`` is the
        mnemo home (where a provider keeps files of its own)."""
        ...

    def capabilities(self) -> Mapping[str, Any]:
        """``tool_names``, ``tool_schemas`` and ``suppresses_local_writes``; read once after initialize."""
        ...

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """Context for this turn, or ``None``; ``messages`` is read-only history."""
        ...

    def handle_tool_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one of the tools this provider declared; the result is a JSON string."""
        ...

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Mirror one operation of an accepted memory-tool call, suppressed local writes included."""
        ...

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Observe a successful turn, with the original (un-enriched) user message."""
        ...

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> str | None:
        """Last look at messages the agent is about to discard; each is ``{"role", "content": str}``.

        Text returned (what the provider extracted) is handed, fenced, to the host's summariser.
        """
        ...

    def shutdown(self) -> None:
        """Flush and close; idempotent; never raises; never closes a resource it borrowed."""
        ...


# Kept by hand rather than read from Protocol internals, which differ between Python versions.
_MEMBERS = (
    "name",
    "is_available",
    "initialize",
    "capabilities",
    "enrich_turn",
    "handle_tool_call",
    "on_memory_write",
    "on_turn_complete",
    "on_compress",
    "shutdown",
)


class LifecycleHooks(Protocol):
    """The optional hooks: a provider defines any of them, with these signatures, and no others change.

    None is required and :class:`BaseProvider` defines none of them, so a provider that does not define
    one is never called for it (a ``prefetch`` that is present replaces ``enrich_turn`` on every turn
    it has served).
    """

    def on_session_end(self, messages: list[dict[str, str]]) -> None:
        """A real session boundary (not only a process exit); ``messages`` is what the host passed, normalised."""
        ...

    def on_session_switch(self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool) -> None:
        """The session id changed under a running agent (resume, branch, reset, compression
        continuation): re-key per-session state. Runs after every event of the old session."""
        ...

    def on_delegation(self, task: str, result: str, child_session_id: str) -> None:
        """A subagent finished ``task`` with ``result``; ``child_session_id`` is its session, or ``""``."""
        ...

    def on_turn_start(self, turn_number: int, message: str) -> None:
        """A turn begins: ``turn_number`` counts from 1 in each session; ``message`` is the user's."""
        ...

    def prefetch(self, query: str) -> str | None:
        """Context for the next turn, computed in the background after a turn with ``query`` as its
        user message; the same return as ``enrich_turn``."""
        ...

    def config_schema(self) -> Sequence[Any]:
        """The settings this provider needs, as :class:`~mnemo.providers.ConfigField` items."""
        ...


# The optional hooks the registry looks for; ``config_schema`` is read by setup, not the registry.
OPTIONAL_HOOKS = ("on_session_end", "on_session_switch", "on_delegation", "on_turn_start", "prefetch")


def optional_hooks(provider: object) -> frozenset[str]:
    """The :data:`OPTIONAL_HOOKS` ``provider`` defines as callables (an attribute that raises counts as absent)."""
    present = set()
    for hook in OPTIONAL_HOOKS:
        try:
            value = getattr(provider, hook, None)
        except Exception:
            continue
        if callable(value):
            present.add(hook)
    return frozenset(present)


def missing_members(candidate: object) -> list[str]:
    """The :class:`MemoryProvider` members ``candidate`` lacks (callables must be callable)."""
    missing = []
    for member in _MEMBERS:
        try:
            value = getattr(candidate, member)
        except Exception:  # a property that raises is as good as absent
            missing.append(member)
            continue
        if member != "name" and not callable(value):
            missing.append(member)
    return missing


class BaseProvider:
    """Optional base class: a no-op default for every hook, so a provider overrides only what it uses.

    Subclasses set ``name`` (a class attribute is enough).
    """

    name: str

    def is_available(self) -> bool:
        """Available unless a subclass says otherwise."""
        return True

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        """Nothing to prepare."""

    def capabilities(self) -> Mapping[str, Any]:
        """No tools, no suppressed writes."""
        return {}

    def enrich_turn(self, user_message: str, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """No context to add."""
        return None

    def handle_tool_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Refuse: a provider declaring tools overrides this."""
        return failure(f"provider {self.name!r} has no tool {name!r}")

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        """Ignore memory writes."""

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        """Ignore completed turns."""

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> str | None:
        """Ignore compression."""
        return None

    def shutdown(self) -> None:
        """Nothing to close."""


@dataclass(frozen=True)
class ProviderCapabilities:
    """What a provider declared after ``initialize``, validated and frozen for the session.

    The schemas are deep copies, so a provider changing its own objects later changes nothing here.
    """

    tool_names: frozenset[str] = frozenset()
    tool_schemas: tuple[Mapping[str, Any], ...] = ()
    suppresses_local_writes: Mapping[str, bool] = field(
        default_factory=lambda: MappingProxyType(dict.fromkeys(WRITE_TARGETS, False))
    )

    def suppresses(self, target: str) -> bool:
        """Whether local writes to ``target`` (``"memory"`` or ``"user"``) are left to this provider."""
        return self.suppresses_local_writes.get(target, False)

    @classmethod
    def from_declared(cls, declared: Any) -> ProviderCapabilities:
        """Validate what ``capabilities()`` returned; raise :class:`ProviderError` naming the problem."""
        if declared is None:
            return cls()
        if not isinstance(declared, Mapping):
            raise ProviderError(f"capabilities() must return a dict, got {type(declared).__name__}")
        unknown = set(declared) - _CAPABILITY_KEYS
        if unknown:
            raise ProviderError(f"unknown capability keys: {', '.join(sorted(map(str, unknown)))}")
        tool_names = _tool_names(declared.get("tool_names", ()))
        schemas = _tool_schemas(declared.get("tool_schemas", ()))
        schema_names = [_schema_name(schema, index) for index, schema in enumerate(schemas)]
        duplicates = sorted({n for n in schema_names if schema_names.count(n) > 1})
        if duplicates:
            raise ProviderError(f"tool_schemas declare {', '.join(duplicates)} more than once")
        if set(schema_names) != tool_names:
            raise ProviderError(
                "tool_names must match the schemas' function names: "
                f"tool_names={sorted(tool_names)}, schemas={sorted(schema_names)}"
            )
        return cls(
            tool_names=frozenset(tool_names),
            tool_schemas=tuple(_wrapped(schema) for schema in schemas),
            suppresses_local_writes=_suppression(declared.get("suppresses_local_writes", False)),
        )


def _tool_names(value: Any) -> set[str]:
    if value is None:
        return set()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ProviderError(f"tool_names must be a set of strings, got {type(value).__name__}")
    names = set()
    for name in value:
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ProviderError(f"tool name {name!r} must match [A-Za-z0-9_-]{{1,64}}")
        names.add(name)
    return names


def _tool_schemas(value: Any) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ProviderError(f"tool_schemas must be a list of schemas, got {type(value).__name__}")
    schemas = list(value)
    for index, schema in enumerate(schemas):
        if not isinstance(schema, Mapping):
            raise ProviderError(f"tool_schemas[{index}] must be a dict, got {type(schema).__name__}")
    return schemas


def _schema_name(schema: Mapping[str, Any], index: int) -> str:
    """The function name of a schema in either OpenAI shape: wrapped ``{"type": "function", ...}`` or bare."""
    body = schema.get("function") if schema.get("type") == "function" else schema
    if not isinstance(body, Mapping):
        raise ProviderError(f"tool_schemas[{index}]: 'function' must be a dict")
    name = body.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ProviderError(f"tool_schemas[{index}]: function name {name!r} must match [A-Za-z0-9_-]{{1,64}}")
    parameters = body.get("parameters")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise ProviderError(f"tool_schemas[{index}] ({name}): 'parameters' must be a JSON schema object")
    return name


def _wrapped(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A deep copy in the wrapped ``{"type": "function", "function": {...}}`` shape agents send to the API."""
    schema = copy.deepcopy(dict(schema))
    return schema if schema.get("type") == "function" else {"type": "function", "function": schema}


def _suppression(value: Any) -> Mapping[str, bool]:
    if isinstance(value, bool):
        return MappingProxyType(dict.fromkeys(WRITE_TARGETS, value))
    if not isinstance(value, Mapping):
        raise ProviderError(
            f"suppresses_local_writes must be a bool or a {{'memory': bool, 'user': bool}} dict, "
            f"got {type(value).__name__}"
        )
    unknown = set(value) - set(WRITE_TARGETS)
    if unknown:
        raise ProviderError(f"suppresses_local_writes: unknown targets {sorted(map(str, unknown))}")
    flags = {}
    for target in WRITE_TARGETS:
        flag = value.get(target, False)
        if not isinstance(flag, bool):
            raise ProviderError(f"suppresses_local_writes[{target!r}] must be a bool, got {type(flag).__name__}")
        flags[target] = flag
    return MappingProxyType(flags)
