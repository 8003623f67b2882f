"""``mnemo serve``: run the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._output import CliError
from ._settings import settings_for

EXIT_USAGE = 2  # a bad command line, as everywhere in mnemo's CLI


def _serve(args: argparse.Namespace) -> int:
    try:
        from ..serve import MemoryServer, TokenMap, parse_address, serve_http, serve_stdio
    except ImportError as exc:
        raise CliError(f"mnemo serve needs the serve extra: pip install 'mnemo-local[serve]' ({exc})") from None
    from ..agent import AgentMemory
    from ..config import load_settings

    settings = settings_for(args)  # a bad configuration stops here, before any client connects

    # The archive marks these sessions as MCP ones unless the configuration names a source itself.
    archive = {"source": "mcp", **settings.providers.get("archive", {})}
    providers = {**settings.providers, "archive": archive}

    def open_memory(session_key: str, user_id: str) -> AgentMemory:
        scope = {"user_id": user_id, "agent_id": args.agent, "channel_id": args.channel}
        return AgentMemory.open(session_key, settings=load_settings(args.home, providers=providers, **scope))

    server = MemoryServer(open_memory, default_user=settings.user_id)
    if args.http is None:
        if args.token is not None:
            raise CliError("--token only applies with --http (over stdio the user is --user)", EXIT_USAGE)
        serve_stdio(server)
        return 0
    host, port = parse_address(args.http)
    tokens = TokenMap.from_settings(settings, args.token)
    serve_http(
        server,
        host,
        port,
        tokens,
        on_ready=lambda url: print(f"mnemo: serving MCP at {url}", file=sys.stderr, flush=True),
    )
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo serve``."""
    serve = subparsers.add_parser(
        "serve",
        parents=[common],
        help="serve memory to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve mnemo to MCP clients: stdio by default (the user is --user or the user_id setting); "
        "with --http, streamable HTTP where each bearer token opens its own user's memory.",
    )
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 by default)",
    )
    serve.add_argument(
        "--token", help="bearer token for --user over HTTP (default: $MNEMO_SERVE_TOKEN / the serve_token setting)"
    )
    serve.set_defaults(handler=_serve)
