"""Providers published by other packages, found through the ``mnemo.providers`` entry-point group.

A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."mnemo.providers"]
    acme = "acme_memory:AcmeProvider"

The object named is a provider class (or any callable taking no arguments and returning a provider), or
a ready provider instance; the provider's ``name`` must be the entry point's name. Installed plug-ins do
nothing until enabled by name in ``config.toml``::

    [providers.acme]
    enabled = true

Loading is isolated per plug-in: an import error, an object that is not a provider, a constructor that
raises or a name that does not match is reported as a :class:`PluginProblem` naming the plug-in, and the
others load all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .protocol import MemoryProvider, missing_members

__all__ = [
    "ENTRY_POINT_GROUP",
    "InstalledPlugin",
    "PluginProblem",
    "enabled_names",
    "installed_plugins",
    "load_enabled",
    "load_plugin",
]

log = logging.getLogger("mnemo.providers")

ENTRY_POINT_GROUP = "mnemo.providers"


@dataclass(frozen=True)
class InstalledPlugin:
    """One entry point of the ``mnemo.providers`` group: the provider's name, where it comes from."""

    name: str
    value: str
    distribution: str
    version: str
    entry_point: metadata.EntryPoint | None = None


class PluginProblem(Exception):
    """Why plug-in ``name`` is not serving: a one-line ``reason``."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(name, reason)
        self.name = name
        self.reason = reason

    def __str__(self) -> str:
        return f"provider plug-in {self.name!r}: {self.reason}"


def installed_plugins() -> dict[str, list[InstalledPlugin]]:
    """Every installed entry point of the group by name; a name with several entries is ambiguous."""
    found: dict[str, list[InstalledPlugin]] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        plugin = InstalledPlugin(
            entry.name,
            entry.value,
            dist.metadata["Name"] if dist is not None else "?",
            dist.version if dist is not None else "?",
            entry,
        )
        found.setdefault(entry.name, []).append(plugin)
    return found


def enabled_names(tables: Mapping[str, Any]) -> list[str]:
    """Provider names whose ``[providers.NAME]`` table says ``enabled = true``, in file order."""
    return [name for name, table in tables.items() if isinstance(table, Mapping) and table.get("enabled") is True]


def load_plugin(name: str, candidates: list[InstalledPlugin] | None = None) -> MemoryProvider:
    """Import and construct plug-in ``name``; raise :class:`PluginProblem` saying why it cannot serve."""
    if candidates is None:
        candidates = installed_plugins().get(name, [])
    if not candidates:
        raise PluginProblem(name, f"not installed (no entry point {name!r} in group {ENTRY_POINT_GROUP!r})")
    sources = sorted({f"{c.distribution} {c.version}" for c in candidates})
    if len(sources) > 1:
        raise PluginProblem(name, f"installed by several distributions ({', '.join(sources)}); uninstall all but one")
    plugin = candidates[0]
    assert plugin.entry_point is not None
    try:
        target = plugin.entry_point.load()
    except (Exception, SystemExit) as exc:
        raise PluginProblem(name, f"cannot import {plugin.value}: {type(exc).__name__}: {exc}") from exc
    if isinstance(target, type) or not _conforms(target):
        if not callable(target):
            raise PluginProblem(name, f"{plugin.value} is neither a provider nor a provider class")
        try:
            target = target()
        except (Exception, SystemExit) as exc:
            raise PluginProblem(name, f"constructing {plugin.value} failed: {type(exc).__name__}: {exc}") from exc
    missing = missing_members(target)
    if missing:
        raise PluginProblem(name, f"{plugin.value} is not a MemoryProvider: missing {', '.join(missing)}")
    try:
        provider_name = target.name
    except Exception as exc:
        raise PluginProblem(name, f"reading its name failed: {type(exc).__name__}: {exc}") from exc
    if provider_name != name:
        raise PluginProblem(name, f"the provider calls itself {provider_name!r}; the entry point must be named the same")
    return target


def _conforms(candidate: object) -> bool:
    return not missing_members(candidate)


def load_enabled(tables: Mapping[str, Any], *, skip: set[str] | frozenset[str] = frozenset()) -> tuple[list[MemoryProvider], list[PluginProblem]]:
    """The plug-ins enabled in ``tables`` (``Settings.providers``), constructed, and the problems of
    those that could not be; names in ``skip`` (providers the host already has) are left alone."""
    names = [name for name in enabled_names(tables) if name not in skip]
    if not names:
        return [], []
    installed = installed_plugins()
    providers: list[MemoryProvider] = []
    problems: list[PluginProblem] = []
    for name in names:
        try:
            providers.append(load_plugin(name, installed.get(name, [])))
        except PluginProblem as problem:
            log.error("%s", problem)
            problems.append(problem)
    return providers, problems
