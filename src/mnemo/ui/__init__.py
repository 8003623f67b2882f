"""``mnemo ui``: a local web inspector to see, search, correct and restore what the agent remembers.

:class:`UIServer` serves it on 127.0.0.1 (the standard library's HTTP server; no dependency, no CDN, every
asset shipped in this package). It is a door like the tools and the CLI, with no memory logic of its own:
search is the graph's hybrid recall, edits are :class:`~mnemo.graph.store.MemoryGraph` calls, curated
entries go through :class:`~mnemo.MemoryStore` (locks, scan, history), the prompt and the per-turn context
come from :class:`~mnemo.AgentMemory`. See :mod:`mnemo.ui.auth` for who may see and change what.
"""

from .server import UIServer

__all__ = ["UIServer"]
