"""Every provider this home knows of, and whether each would serve a session: what ``mnemo providers
list`` and ``mnemo providers status`` show.

Known providers are the built-in archive and graph, every installed plug-in (entry-point group
``mnemo.providers``) and every name enabled in ``config.toml``, installed or not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..config import Settings
from ..errors import ConfigError
from .archive import ArchiveProvider
from .config_schema import ConfigField, read_config_schema
from .configuration import missing_required, provider_config
from .discovery import InstalledPlugin, PluginProblem, enabled_names, installed_plugins, load_plugin
from .graph import GraphProvider
from .protocol import MemoryProvider, ProviderError

__all__ = ["BUILTIN", "ProviderStatus", "catalogue", "provider_named"]

# The built-in providers by name, and the setting that turns each on.
BUILTIN: dict[str, tuple[Callable[[], MemoryProvider], str]] = {
    "archive": (ArchiveProvider, "archive_enabled"),
    "graph": (GraphProvider, "graph_enabled"),
}


@dataclass
class ProviderStatus:
    """One provider as this home sees it. ``reason`` says why it would not serve (None: it would)."""

    name: str
    origin: str
    installed: bool
    enabled: bool
    configured: bool | None = None
    available: bool | None = None
    missing: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def provider_named(name: str, installed: dict[str, list[InstalledPlugin]] | None = None) -> MemoryProvider:
    """A fresh, uninitialized provider ``name``: a built-in or an installed plug-in (PluginProblem if neither)."""
    if name in BUILTIN:
        return BUILTIN[name][0]()
    return load_plugin(name, (installed_plugins() if installed is None else installed).get(name, []))


def catalogue(settings: Settings, *, check: bool = False) -> list[ProviderStatus]:
    """Every known provider, built-ins first, then by name.

    Without ``check`` only metadata is read (no plug-in is imported). With it each provider is
    constructed, its schema and configuration checked and ``is_available()`` asked: the ``reason`` is
    then the first thing that stops it.
    """
    installed = installed_plugins()
    enabled = set(enabled_names(settings.providers))
    statuses = [
        ProviderStatus(name, "built-in", True, bool(getattr(settings, setting)))
        for name, (_, setting) in BUILTIN.items()
    ]
    for name in sorted((set(installed) | enabled) - set(BUILTIN)):
        origins = sorted({f"{p.distribution} {p.version}" for p in installed.get(name, [])})
        statuses.append(ProviderStatus(name, ", ".join(origins) or "-", name in installed, name in enabled))
    for status in statuses:
        if not status.installed:
            status.reason = "not installed"
        elif check:
            _check(status, settings, installed)
        if status.reason is None and not status.enabled:
            status.reason = (
                f"turned off ({BUILTIN[status.name][1]} = false)"
                if status.name in BUILTIN
                else f"not enabled: run 'mnemo providers setup {status.name}'"
            )
    return statuses


def _check(status: ProviderStatus, settings: Settings, installed: dict[str, list[InstalledPlugin]]) -> None:
    try:
        provider = provider_named(status.name, installed)
        schema: tuple[ConfigField, ...] = read_config_schema(provider)
    except (PluginProblem, ProviderError) as exc:
        status.reason = exc.reason if isinstance(exc, PluginProblem) else f"config_schema: {exc}"
        return
    table = settings.providers.get(status.name, {})
    try:
        config = provider_config(status.name, table if isinstance(table, dict) else {}, schema, home=settings.home)
    except ConfigError as exc:
        status.reason = str(exc)
        return
    status.settings = [f.name for f in schema]
    status.missing = missing_required(config, schema)
    status.configured = not status.missing
    try:
        status.available = bool(provider.is_available())
    except Exception as exc:
        status.available = False
        status.reason = f"is_available() failed: {type(exc).__name__}: {exc}"
        return
    if status.missing:
        status.reason = f"missing required settings: {', '.join(status.missing)}"
    elif not status.available:
        status.reason = "not available (is_available() is false)"
