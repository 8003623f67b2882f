"""``mnemo ui``: serve the local web inspector until interrupted."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._settings import settings_for


def _ui(args: argparse.Namespace) -> int:
    from ..tokens import TokenMap
    from ..ui import UIServer

    settings = settings_for(args)
    server = UIServer(settings, host=args.host, port=args.port, tokens=TokenMap.from_settings(settings))
    try:
        # The start URL is the credential: printed once, to the terminal that started the server.
        print(f"mnemo: UI at {server.url} (Ctrl-C to stop); open this link to log in:", file=sys.stderr)
        print(f"    {server.start_url}", file=sys.stderr, flush=True)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo ui``."""
    ui = subparsers.add_parser(
        "ui",
        parents=[common],
        help="browse, search, correct and restore memory in a local web page",
        description="Serve a local web inspector of this home's memory: overview, memories with search, the "
        "recall debugger, curated entries with history, sessions and the prompt preview. It listens on "
        "127.0.0.1 and prints a one-time login link; another host needs a configured token.",
    )
    ui.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; others need a configured token)"
    )
    ui.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    ui.set_defaults(handler=_ui, interactive=True)
