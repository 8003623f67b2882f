"""Bearer tokens for ``mnemo serve --http``: which user a request speaks for, or a 401.

Tokens come from the settings, through :class:`~mnemo.tokens.TokenMap` (shared with ``mnemo ui``); they are
never logged: a refused request is logged by its client address.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..tokens import TokenMap
from .server import USER_SCOPE_KEY

log = logging.getLogger("mnemo.serve")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def bearer_token(scope: Scope) -> str | None:
    """The ``Authorization: Bearer ...`` credential of an ASGI request, or None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credential.strip():
                return credential.strip()
            return None
    return None


class BearerAuth:
    """ASGI middleware: every HTTP request carries a known bearer token, whose user it then speaks for.
    With no tokens, every request is the ``default_user``'s (``mnemo serve`` allows that on loopback only)."""

    def __init__(self, app: ASGIApp, tokens: TokenMap, *, default_user: str = "") -> None:
        self.app = app
        self.tokens = tokens
        self.default_user = default_user

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.tokens:
            user: str | None = self.default_user
        else:
            presented = bearer_token(scope)
            user = self.tokens.user_for(presented) if presented is not None else None
            if user is None:
                client = scope.get("client") or ("?", 0)
                log.warning(
                    "refused an HTTP request from %s: %s bearer token", client[0], "wrong" if presented else "no"
                )
                await _unauthorized(
                    send, "a valid bearer token is required" if presented is None else "unknown bearer token"
                )
                return
        await self.app({**scope, USER_SCOPE_KEY: user}, receive, send)


async def _unauthorized(send: Callable[[Any], Awaitable[None]], reason: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": reason}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="mnemo"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
