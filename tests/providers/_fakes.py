"""Real providers for the registry tests: each implements the protocol, with a behaviour to observe."""

from __future__ import annotations

import threading
import time
from typing import Any

from mnemo.providers import BaseProvider
from mnemo.tools._json import success


class Recorder(BaseProvider):
    """Answers with fixed context and records every hook it receives, with the thread it ran on."""

    def __init__(self, name: str, context: Any = None, capabilities: Any = None, available: bool = True) -> None:
        self.name = name
        self.context = context
        self.declared = capabilities if capabilities is not None else {}
        self.available = available
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.threads: dict[str, threading.Thread] = {}
        self._changed = threading.Condition()

    def _record(self, hook: str, *args: Any) -> None:
        with self._changed:
            self.calls.append((hook, args))
            self.threads[hook] = threading.current_thread()
            self._changed.notify_all()

    def calls_to(self, hook: str) -> list[tuple[Any, ...]]:
        """Arguments of every call to ``hook``, in order."""
        with self._changed:
            return [args for name, args in self.calls if name == hook]

    def wait_for(self, hook: str, count: int = 1, timeout: float = 5.0) -> list[tuple[Any, ...]]:
        """Block until ``hook`` was called ``count`` times (background hooks); return their arguments."""
        with self._changed:
            self._changed.wait_for(lambda: len([1 for name, _ in self.calls if name == hook]) >= count, timeout)
        return self.calls_to(hook)

    def is_available(self) -> bool:
        self._record("is_available")
        return self.available

    def initialize(self, session_key: str, config: dict[str, Any]) -> None:
        self._record("initialize", session_key, config)

    def capabilities(self) -> Any:
        self._record("capabilities")
        return self.declared

    def enrich_turn(self, user_message: str, messages: Any) -> Any:
        self._record("enrich_turn", user_message, messages)
        return self.context

    def handle_tool_call(self, name: str, arguments: dict[str, Any]) -> str:
        self._record("handle_tool_call", name, arguments)
        return success(provider=self.name, tool=name, arguments=arguments)

    def on_memory_write(self, action: str, target: str, content: str, old_text: str | None = None) -> None:
        self._record("on_memory_write", action, target, content, old_text)

    def on_turn_complete(self, user_message: str, assistant_response: str) -> None:
        self._record("on_turn_complete", user_message, assistant_response)

    def on_compress(self, messages: list[dict[str, str]], compression_count: int) -> None:
        self._record("on_compress", messages, compression_count)

    def shutdown(self) -> None:
        self._record("shutdown")


class Raising(BaseProvider):
    """Raises from every hook it can."""

    def __init__(self, name: str, capabilities: Any = None) -> None:
        self.name = name
        self.declared = capabilities or {}

    def capabilities(self) -> Any:
        return self.declared

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.name} is broken")

    enrich_turn = handle_tool_call = on_memory_write = on_turn_complete = on_compress = shutdown = _fail


class Sleeper(Recorder):
    """A Recorder that first sleeps ``delay`` seconds in the hooks named in ``slow``."""

    def __init__(self, name: str, delay: float, slow: tuple[str, ...], context: Any = None) -> None:
        super().__init__(name, context=context)
        self.delay = delay
        self.slow = slow

    def _record(self, hook: str, *args: Any) -> None:
        if hook in self.slow:
            time.sleep(self.delay)
        super()._record(hook, *args)


class Stuck(Recorder):
    """A Recorder that blocks in the hooks named in ``blocking`` until the test sets ``release``."""

    def __init__(self, name: str, blocking: tuple[str, ...] = ("enrich_turn",), context: Any = None) -> None:
        super().__init__(name, context=context)
        self.blocking = blocking
        self.release = threading.Event()
        self.entered: dict[str, int] = {}

    def _record(self, hook: str, *args: Any) -> None:
        if hook in self.blocking:
            self.entered[hook] = self.entered.get(hook, 0) + 1
            self.release.wait(10)
        super()._record(hook, *args)


def timed(call: Any, *args: Any) -> tuple[Any, float]:
    """``call(*args)`` and the seconds it took."""
    started = time.monotonic()
    result = call(*args)
    return result, time.monotonic() - started


def tool(name: str) -> dict[str, Any]:
    """An OpenAI function-format schema for a tool taking one string ``query``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"the {name} tool",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }


def tools(*names: str) -> dict[str, Any]:
    """Capabilities declaring ``names`` as tools."""
    return {"tool_names": set(names), "tool_schemas": [tool(n) for n in names]}


class WithLifecycle:
    """Mixed into a Recorder: every optional lifecycle hook, recorded like the required ones.

    ``prefetch`` answers ``prefetched`` (or, if that is None, the provider's ``context``).
    """

    prefetched: Any = None

    def on_session_end(self, messages: list[dict[str, str]]) -> None:
        self._record("on_session_end", messages)  # type: ignore[attr-defined]

    def on_session_switch(self, new_session_id: str, parent_session_id: str | None, reset: bool, rewound: bool) -> None:
        self._record("on_session_switch", new_session_id, parent_session_id, reset, rewound)  # type: ignore[attr-defined]

    def on_delegation(self, task: str, result: str, child_session_id: str) -> None:
        self._record("on_delegation", task, result, child_session_id)  # type: ignore[attr-defined]

    def on_turn_start(self, turn_number: int, message: str) -> None:
        self._record("on_turn_start", turn_number, message)  # type: ignore[attr-defined]

    def prefetch(self, query: str) -> Any:
        self._record("prefetch", query)  # type: ignore[attr-defined]
        return self.prefetched if self.prefetched is not None else self.context  # type: ignore[attr-defined]


class Hooked(WithLifecycle, Recorder):
    """A Recorder with every optional hook."""


class SlowHooked(WithLifecycle, Sleeper):
    """A Sleeper with every optional hook."""


class StuckHooked(WithLifecycle, Stuck):
    """A Stuck provider with every optional hook."""


class RaisingHooked(Raising):
    """Raises from every optional hook as well."""

    on_session_end = on_session_switch = on_delegation = on_turn_start = prefetch = Raising._fail
