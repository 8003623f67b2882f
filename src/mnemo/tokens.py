"""Configured access tokens: which user a presented token speaks for (``mnemo serve --http``, ``mnemo ui``).

Tokens come from the settings (``serve_token`` / ``MNEMO_SERVE_TOKEN`` / ``--token`` for one user,
``[[serve.tokens]]`` for several). They are compared in constant time, by digest, against every
configured token (no early exit), and never logged.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from .config import MIN_SERVE_TOKEN_LENGTH, Settings
from .errors import ConfigError


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
