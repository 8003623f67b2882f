"""Bearer tokens for ``mnemo serve --http``: which user a request speaks for, or a 401.

Tokens come from the settings (``serve_token`` / ``MNEMO_SERVE_TOKEN`` / ``--token`` for one user,
``[[serve.tokens]]`` for several). They are compared in constant time, by digest, against every
configured token (no early exit), and never logged: a refused request is logged by its client address.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from ..config import MIN_SERVE_TOKEN_LENGTH, Settings
from ..errors import ConfigError
from .server import USER_SCOPE_KEY

log = logging.getLogger("mnemo.serve")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenMap:
    """Bearer token → user id. Empty means no authentication (only allowed on loopback)."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._entries: list[tuple[bytes, str]] = []
        for token, user_id in pairs:
            if len(token) < MIN_SERVE_TOKEN_LENGTH:
                raise ConfigError(f"a serve token must be at least {MIN_SERVE_TOKEN_LENGTH} characters")
            digest = _digest(token)
            if any(hmac.compare_digest(digest, known) for known, _ in self._entries):
                raise ConfigError("the same serve token is configured twice")
            self._entries.append((digest, user_id))

    @classmethod
    def from_settings(cls, settings: Settings, token: str | None = None) -> TokenMap:
        """``token`` (``--token``) or the ``serve_token`` setting for ``settings.user_id``, plus every
        ``[[serve.tokens]]`` entry."""
        pairs = [(entry.token.get_secret_value(), entry.user_id) for entry in settings.serve_tokens]
        single = (
            token if token is not None else (settings.serve_token.get_secret_value() if settings.serve_token else None)
        )
        if single is not None:
            pairs.insert(0, (single, settings.user_id))
        if len({user_id for _, user_id in pairs}) > 1 and not settings.curated_per_user:
            # Otherwise every user's agent would read and edit the one shared USER.md.
            raise ConfigError(
                "tokens for several users need curated_per_user = true (one MEMORY.md / USER.md per user)"
            )
        return cls(pairs)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def user_for(self, presented: str) -> str | None:
        """The user whose token ``presented`` is, or None; the same work for a hit or a miss."""
        digest = _digest(presented)
        found: str | None = None
        for known, user_id in self._entries:
            if hmac.compare_digest(digest, known):
                found = user_id
        return found


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
