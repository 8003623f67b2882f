"""``mnemo serve``: mnemo's memory for any MCP client (Claude Desktop, Claude Code, Cursor, ...).

:class:`MemoryServer` holds one :class:`~mnemo.AgentMemory` per client connection and serves exactly its
tools, its curated files and memories as resources, and a "use your memory" prompt;
:func:`serve_stdio` and :func:`serve_http` run it. Needs the ``serve`` extra (``pip install
'mnemo-local[serve]'``), which brings the official ``mcp`` SDK.
"""

from .auth import TokenMap
from .server import MemoryServer
from .transports import parse_address, serve_http, serve_stdio

__all__ = ["MemoryServer", "TokenMap", "parse_address", "serve_http", "serve_stdio"]
