"""The root of mnemo's exception tree.

Every error the library raises on purpose derives from :class:`MnemoError`, so an agent loop can catch
mnemo's refusals without catching its own bugs. Tool handlers turn these into JSON; the CLI turns them
into a one-line reason and a non-zero exit code.
"""

from __future__ import annotations


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
