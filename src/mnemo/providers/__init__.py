"""Memory providers: the :class:`MemoryProvider` contract and the :class:`ProviderRegistry` that runs them.

A provider is any backend that adds context to a turn, serves its own tools, or wants to observe
memory writes, completed turns and compression: the session archive, the memory graph, or a
third-party service. The registry owns their lifecycle and all threading.
"""

from __future__ import annotations

from .archive import ArchiveProvider
from .graph import GraphProvider
from .protocol import BaseProvider, MemoryProvider, ProviderCapabilities, ProviderError
from .registry import ProviderRegistry

__all__ = [
    "ArchiveProvider",
    "GraphProvider",
    "BaseProvider",
    "MemoryProvider",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderRegistry",
]
