"""Who a browser is, and whether a request may act: the one-time start token, session cookies, and the
checks every request passes (Host) and every write passes on top (Origin, CSRF token).

- **Start token.** ``mnemo ui`` prints a URL carrying a random token, as Jupyter does. The first request
  that presents it gets a session cookie for the user the UI was started as, and the token is spent: a URL
  left in a shell's scroll-back or a browser's history opens nothing. Configured tokens
  (:class:`~mnemo.tokens.TokenMap`: ``serve_token``, ``[[serve.tokens]]``) may be typed on the login page
  any number of times; each opens its own user's memory and nothing else.
- **Session cookie.** ``HttpOnly``, ``SameSite=Strict``, random, held only in this process's memory (a
  restart logs everyone out), expiring after ``SESSION_SECONDS`` idle.
- **Host.** On loopback, a request whose ``Host`` header is not one this server answers to is refused, so a
  hostile page cannot reach it through DNS rebinding. Beyond loopback (configured tokens only) the names the
  server is reached by are not known here: a write must then come from the origin its own ``Host`` names.
- **Writes.** A POST must come from this origin (``Origin``, or when a browser sends none, ``Referer``;
  ``Sec-Fetch-Site: cross-site`` is refused outright) and carry the session's CSRF token in its form.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..tokens import TokenMap

SESSION_COOKIE = "mnemo_ui"
SESSION_SECONDS = 12 * 3600
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(slots=True)
class Session:
    """One logged-in browser: whose memory it sees, the token its forms must carry, and when it expires."""

    user_id: str
    csrf: str
    expires: float
    # The (agent, channel) part of the scope this browser looks at; the user part is never the browser's choice.
    view: tuple[str, str] = ("", "")
    flash: list[str] = field(default_factory=list)


class Gate:
    """The UI's doorkeeper. ``tokens`` are the configured ones (possibly none); ``start_user`` is the user
    the one-time start token logs in as; ``origins`` are the ``scheme://host:port`` this server is reached
    at (its Host headers are derived from them)."""

    def __init__(
        self,
        tokens: TokenMap,
        start_user: str,
        origins: Iterable[str] | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tokens = tokens
        self.start_user = start_user
        # None: served beyond loopback under configured tokens, reached by names this process cannot know;
        # any Host is answered and a write must come from the origin its own Host names.
        self.origins = None if origins is None else frozenset(origin.rstrip("/") for origin in origins)
        self.hosts = None if self.origins is None else frozenset(urlsplit(origin).netloc for origin in self.origins)
        self.start_token: str | None = secrets.token_urlsafe(32)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._clock = clock

    # -- logging in ----------------------------------------------------------------------------------

    def user_for(self, presented: str) -> str | None:
        """The user ``presented`` opens (spending the start token), or None."""
        with self._lock:
            start = self.start_token
            if start is not None and hmac.compare_digest(presented.encode(), start.encode()):
                self.start_token = None
                return self.start_user
        return self.tokens.user_for(presented)

    def open_session(self, user_id: str, view: tuple[str, str] = ("", "")) -> tuple[str, Session]:
        """A new session for ``user_id``: its cookie value and its record."""
        key = secrets.token_urlsafe(32)
        session = Session(user_id, secrets.token_urlsafe(32), self._clock() + SESSION_SECONDS, view)
        with self._lock:
            self._sessions[key] = session
        return key, session

    def session(self, cookie: str | None) -> Session | None:
        """The live session whose cookie value is ``cookie`` (its expiry pushed back), or None."""
        if not cookie:
            return None
        now = self._clock()
        with self._lock:
            session = self._sessions.get(cookie)
            if session is None:
                return None
            if session.expires < now:
                del self._sessions[cookie]
                return None
            session.expires = now + SESSION_SECONDS
            return session

    def close_session(self, cookie: str | None) -> None:
        """Log the browser holding ``cookie`` out."""
        with self._lock:
            self._sessions.pop(cookie or "", None)

    # -- checking requests ---------------------------------------------------------------------------

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` header names this server."""
        return host is not None and (self.hosts is None or host.lower() in self.hosts)

    def write_refusal(self, headers: Mapping[str, str], session: Session | None, form_csrf: str | None) -> str | None:
        """Why a POST with these headers and form must be refused, or None when it may go ahead.
        ``session`` is None for the login form, which needs no CSRF token (it has no session yet) but the
        same-origin checks all the same."""
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return "a cross-site request"
        origin = headers.get("origin")
        if origin is None or origin == "null":
            referer = headers.get("referer")
            origin = None if not referer else "{0.scheme}://{0.netloc}".format(urlsplit(referer))
        allowed = self.origins if self.origins is not None else {f"http://{headers.get('host', '')}".lower()}
        if origin is None or origin.rstrip("/").lower() not in allowed:
            return "a request from another origin (or one naming none)"
        if session is None:
            return None
        if not form_csrf or not hmac.compare_digest(form_csrf.encode(), session.csrf.encode()):
            return "a missing or wrong CSRF token"
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) only listens on this machine."""
    return host in LOOPBACK_HOSTS or host.startswith("127.")
