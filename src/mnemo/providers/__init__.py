"""Memory providers: the :class:`MemoryProvider` contract and the :class:`ProviderRegistry` that runs them.

A provider is any backend that adds context to a turn, serves its own tools, or wants to observe
memory writes, completed turns and compression (and, optionally, session boundaries, delegation and
prefetch: :class:`LifecycleHooks`): the session archive, the memory graph, or a third-party service,
passed to the agent or installed as a plug-in (:mod:`mnemo.providers.discovery`). The registry owns
their lifecycle and all threading.
"""

from __future__ import annotations

from .archive import ArchiveProvider
from .config_schema import ConfigField
from .discovery import ENTRY_POINT_GROUP, PluginProblem
from .graph import GraphProvider
from .protocol import BaseProvider, LifecycleHooks, MemoryProvider, ProviderCapabilities, ProviderError
from .registry import ProviderRegistry

__all__ = [
    "ArchiveProvider",
    "GraphProvider",
    "BaseProvider",
    "ConfigField",
    "ENTRY_POINT_GROUP",
    "LifecycleHooks",
    "MemoryProvider",
    "PluginProblem",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderRegistry",
]
