"""The root of mnemo's exception tree.

Every error the library raises on purpose derives from :class:`MnemoError`, so an agent loop can catch
mnemo's refusals without catching its own bugs. Tool handlers turn these into JSON; the CLI turns them
into a one-line reason and a non-zero exit code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .degraded import Degradation


class MnemoError(Exception):
    """Base class of every error mnemo raises deliberately."""


class ConfigError(MnemoError, ValueError):
    """A setting in ``config.toml``, the environment or a keyword argument is unknown or invalid."""


class InvalidArgument(MnemoError, ValueError):
    """An argument has the wrong type or value; ``field`` names it so the caller can fix it."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class TierUnavailable(MnemoError, RuntimeError):
    """A call needs a memory tier this :class:`~mnemo.AgentMemory` does not have: the session archive or
    the memory graph is disabled in the settings, or its provider failed to start (see the log)."""


class StorageUnavailable(MnemoError):
    """mnemo's own storage could not be opened; ``problems`` lists each component and why.

    Raised by :meth:`AgentMemory.open <mnemo.agent.AgentMemory.open>` unless the ``allow_degraded``
    setting lets the session start without them (see :mod:`mnemo.degraded`).
    """

    def __init__(self, problems: Iterable[Degradation]) -> None:
        self.problems = tuple(problems)
        listed = "; ".join(str(problem) for problem in self.problems)
        super().__init__(f"memory storage unavailable: {listed} (run `mnemo doctor`; or set allow_degraded to start without it)")


EXCERPT_CHARS = 40
"""The most characters of an offending value an error message quotes."""


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, escaped quotation of ``value`` for an error message, whatever its size or content.

    Strings are quoted with Python escapes (so control characters, lone surrogates and invisible
    characters show as ``\\x00``, ``\\ud800``...) and cut to ``limit`` characters, the full length noted;
    other values are shown by type. An error never echoes unbounded input back to a model or a log.
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    if value is None or isinstance(value, (bool, int, float)):
        shown = repr(value)
        return shown if len(shown) <= limit else f"{shown[:limit]}…"
    return f"a {type(value).__name__}"


def check_text(field: str, value: str) -> str:
    """``value`` if it is text that can be stored anywhere; else :class:`InvalidArgument` naming ``field``.

    Refuses NUL characters (C strings, SQLite and many tools cut text at them) and lone surrogates
    (they cannot be encoded as UTF-8, so no file or database can hold them).
    """
    if "\x00" in value:
        raise InvalidArgument(field, "must not contain NUL characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgument(
                field, f"is not valid UTF-8 text: a lone surrogate {excerpt(value[exc.start : exc.end])} at index {exc.start}"
            ) from None
    return value
