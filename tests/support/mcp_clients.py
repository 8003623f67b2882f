"""Real ``mnemo serve`` processes and the official ``mcp`` client talking to them, over stdio and HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

# A raw JSON-RPC initialize, for tests that speak the wire protocol themselves.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}

ALICE_TOKEN = "alice-token-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"


def write_config(home: Path, text: str = "") -> None:
    """``home/config.toml``: no embedding model (the tests need none), plus ``text``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'graph_embedder = "none"\n{text}', encoding="utf-8")


def two_user_config(home: Path) -> None:
    """A home whose HTTP server serves alice and bob, each with their own token and curated files."""
    write_config(
        home,
        "curated_per_user = true\n"
        f'[[serve.tokens]]\ntoken = "{ALICE_TOKEN}"\nuser_id = "alice"\n'
        f'[[serve.tokens]]\ntoken = "{BOB_TOKEN}"\nuser_id = "bob"\n',
    )


def _collector(notifications: list[Any] | None) -> Any:
    async def on_message(message: Any) -> None:
        if notifications is not None:
            notifications.append(message)

    return on_message


def notification_methods(messages: list[Any]) -> list[str | None]:
    """The methods of the server notifications a client received."""
    return [getattr(getattr(m, "root", m), "method", None) for m in messages]


def serve_command(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "mnemo", "--home", str(home), "serve", *args]


@asynccontextmanager
async def stdio_session(home: Path, *args: str, notifications: list[Any] | None = None) -> AsyncIterator[ClientSession]:
    """An initialised client session on a new ``mnemo serve`` subprocess over stdio."""
    params = StdioServerParameters(command=sys.executable, args=serve_command(home, *args)[1:], env=dict(os.environ))

    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=_collector(notifications)) as session:
                await session.initialize()
                yield session


@contextmanager
def http_server(home: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """A ``mnemo serve --http 127.0.0.1:0`` subprocess; yields its URL, then stops it with SIGTERM and
    checks it shut down cleanly."""
    process = subprocess.Popen(
        serve_command(home, "--http", "127.0.0.1:0", *args),
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        line = process.stderr.readline()  # type: ignore[union-attr]
        assert "serving MCP at" in line, line + process.stderr.read()  # type: ignore[union-attr]
        yield line.split()[-1]
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        rest = process.stderr.read()  # type: ignore[union-attr]
        assert code == 0, rest
        assert "Traceback" not in rest, rest


@asynccontextmanager
async def http_session(
    url: str, token: str | None, notifications: list[Any] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised client session on the HTTP server at ``url``, sending ``token`` as its bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1], message_handler=_collector(notifications)) as session:
                await session.initialize()
                yield session


def result_json(result: Any) -> dict[str, Any]:
    """The JSON document of a tool result (its one text block)."""
    return json.loads(result.content[0].text)
