"""The HTTP server behind ``mnemo ui``: the standard library's threading server, the gate in front of every
route, and the static assets shipped in this package.

The standard library is enough for a local inspector serving one person's browser (a few requests a
second, each answered by a SQLite read of milliseconds), so the UI adds no dependency and works wherever
mnemo does. Each request runs on its own thread; mnemo's stores are safe to share between threads.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ..archive.base import SessionNotFound
from ..config import Settings
from ..errors import ConfigError, MnemoError
from ..graph.errors import MemoryNotFound
from ..graph.review import ReviewConflict, ReviewNotFound
from ..tokens import TokenMap
from . import views
from .auth import SESSION_COOKIE, SESSION_SECONDS, Gate, Session, is_loopback
from .layout import page
from .routes import ROUTES, Request, Response
from .workspace import Home

log = logging.getLogger("mnemo.ui")

MAX_FORM_BYTES = 256 * 1024
_STATIC = {"app.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
_HEADERS = {
    # Nothing from elsewhere: every asset is this server's own; no inline script; no framing.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class UIServer:
    """``mnemo ui``'s server for the home of ``settings``, at ``host``:``port`` (0: any free port).

    ``tokens`` are the configured access tokens (see :class:`~mnemo.tokens.TokenMap`); without any, the
    server refuses to listen anywhere but on loopback (:class:`~mnemo.errors.ConfigError`). The one-time
    start URL (:attr:`start_url`) logs a browser in as ``settings.user_id``.
    """

    def __init__(
        self, settings: Settings, *, host: str = "127.0.0.1", port: int = 0, tokens: TokenMap | None = None
    ) -> None:
        tokens = tokens if tokens is not None else TokenMap(())
        if not is_loopback(host) and not tokens:
            raise ConfigError(
                f"mnemo ui listens on {host} only with a configured token (serve_token or [[serve.tokens]]); "
                "without one it serves 127.0.0.1 alone"
            )
        self.home = Home(settings)
        try:
            self._httpd = ThreadingHTTPServer((host, port), _Handler)
        except OSError:
            self.home.close()
            raise
        # Daemons: closing the server does not wait for a browser's idle connection (see Workspace for the
        # one piece of work that must not run on a daemon thread).
        self._httpd.daemon_threads = True
        self._httpd.ui = self  # type: ignore[attr-defined]
        bound = self._httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}"
        origins = {self.url, f"http://127.0.0.1:{bound}", f"http://localhost:{bound}"} if is_loopback(host) else None
        self.gate = Gate(tokens, settings.user_id, origins)
        self._thread: threading.Thread | None = None

    @property
    def start_url(self) -> str:
        """The URL that logs the first browser in (spent once used; the login page remains)."""
        token = self.gate.start_token
        return f"{self.url}/?{urlencode({'token': token})}" if token else f"{self.url}/login"

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (or an interrupt) ends it."""
        self._httpd.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        """Serve on a background thread."""
        self._thread = threading.Thread(target=self.serve_forever, name="mnemo-ui", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and close every store the UI opened; idempotent."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self.home.close()

    def __enter__(self) -> UIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _status_of(exc: Exception) -> int:
    if isinstance(exc, (MemoryNotFound, SessionNotFound, ReviewNotFound)):
        return HTTPStatus.NOT_FOUND
    if isinstance(exc, ReviewConflict):
        return HTTPStatus.CONFLICT  # decided already, or not the content the page showed
    if isinstance(exc, PermissionError):
        return HTTPStatus.FORBIDDEN
    return HTTPStatus.BAD_REQUEST  # bad input, a refused write (scan, budget, ambiguity): the page says which


class _Handler(BaseHTTPRequestHandler):
    server_version = "mnemo-ui"
    sys_version = ""
    protocol_version = "HTTP/1.0"

    @property
    def ui(self) -> UIServer:
        return self.server.ui  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        # The path only: a query may hold the start token.
        log.debug("%s %s", self.command, urlsplit(self.path).path)

    # -- answering ----------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {**_HEADERS, **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _redirect(self, location: str, headers: dict[str, str] | None = None) -> None:
        self._send(HTTPStatus.SEE_OTHER, b"", "text/plain", {"Location": location, **(headers or {})})

    def _page(self, status: int, title: str, body: str, session: Session | None = None, active: str = "") -> None:
        flash, user, scope, csrf = [], None, None, ""
        if session is not None:
            flash, session.flash = session.flash, []
            user, csrf = session.user_id, session.csrf
            scope = self.ui.home.workspace(session.user_id).scope(*session.view)
        document = page(title, body, active=active, user=user, scope=scope, csrf=csrf, flash=flash)
        self._send(status, document.encode("utf-8"), "text/html; charset=utf-8")

    def _refuse(self, status: int, reason: str, session: Session | None = None) -> None:
        log.warning("refused %s %s from %s: %s", self.command, urlsplit(self.path).path, self.client_address[0], reason)
        self._page(status, "Refused", views.error(f"Refused: {reason}."), session)

    # -- the request ---------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle()

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        self._handle()

    def _cookie(self) -> str | None:
        try:
            jar = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return None
        morsel = jar.get(SESSION_COOKIE)
        return morsel.value if morsel else None

    def _handle(self) -> None:
        gate = self.ui.gate
        if not gate.host_allowed(self.headers.get("Host")):
            self._refuse(HTTPStatus.MISDIRECTED_REQUEST, "this server does not answer to that host name")
            return
        parts = urlsplit(self.path)
        path, query = parts.path or "/", parse_qs(parts.query)
        if path.startswith("/static/") and self.command in ("GET", "HEAD"):
            self._static(path.removeprefix("/static/"))
            return
        form: dict[str, list[str]] = {}
        if self.command == "POST":
            parsed = self._form()
            if parsed is None:
                return
            form = parsed
        if path == "/login":
            self._login(form if self.command == "POST" else None)
            return
        if self.command == "GET" and "token" in query:
            self._exchange(query["token"][0], path, query)
            return
        cookie = self._cookie()
        session = gate.session(cookie)
        if session is None:
            if self.command == "POST":
                self._refuse(HTTPStatus.FORBIDDEN, "not logged in")
            else:
                self._redirect("/login")
            return
        if self.command == "POST":
            reason = gate.write_refusal(self._lower_headers(), session, (form.get("csrf") or [None])[0])
            if reason is not None:
                self._refuse(HTTPStatus.FORBIDDEN, reason, session)
                return
            if path == "/logout":
                gate.close_session(cookie)
                self._redirect(
                    "/login", {"Set-Cookie": f"{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"}
                )
                return
        self._route(path, query, form, session)

    def _lower_headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _form(self) -> dict[str, list[str]] | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_FORM_BYTES:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a form must be at most {MAX_FORM_BYTES:,} bytes")
            return None
        kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        raw = self.rfile.read(length)
        if length and kind != "application/x-www-form-urlencoded":
            self._refuse(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "a form must be sent URL-encoded")
            return None
        try:
            return parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            self._refuse(HTTPStatus.BAD_REQUEST, "a form must be UTF-8")
            return None

    def _static(self, name: str) -> None:
        if name not in _STATIC:
            self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")
            return
        data = resources.files(__package__).joinpath("static", name).read_bytes()
        self._send(HTTPStatus.OK, data, _STATIC[name], {"Cache-Control": "max-age=3600"})

    def _start_session(self, user_id: str, location: str) -> None:
        workspace = self.ui.home.workspace(user_id)
        settings = workspace.settings
        key, _ = self.ui.gate.open_session(user_id, (settings.agent_id, settings.channel_id))
        cookie = f"{SESSION_COOKIE}={key}; Path=/; Max-Age={SESSION_SECONDS}; HttpOnly; SameSite=Strict"
        self._redirect(location, {"Set-Cookie": cookie})

    def _exchange(self, token: str, path: str, query: dict[str, list[str]]) -> None:
        user = self.ui.gate.user_for(token)
        if user is None:
            self._page(HTTPStatus.FORBIDDEN, "Log in", views.login("That link's token is spent or unknown."))
            return
        rest = urlencode([(k, v) for k, values in query.items() if k != "token" for v in values])
        self._start_session(user, path + (f"?{rest}" if rest else ""))

    def _login(self, form: dict[str, list[str]] | None) -> None:
        if form is None:
            self._page(HTTPStatus.OK, "Log in", views.login())
            return
        reason = self.ui.gate.write_refusal(self._lower_headers(), None, None)
        if reason is not None:
            self._refuse(HTTPStatus.FORBIDDEN, reason)
            return
        user = self.ui.gate.user_for((form.get("token") or [""])[0].strip())
        if user is None:
            log.warning("refused a login from %s: unknown token", self.client_address[0])
            self._page(HTTPStatus.FORBIDDEN, "Log in", views.login("Unknown token."))
            return
        self._start_session(user, "/")

    def _route(self, path: str, query: dict[str, list[str]], form: dict[str, list[str]], session: Session) -> None:
        method = "GET" if self.command == "HEAD" else self.command
        workspace = self.ui.home.workspace(session.user_id)
        for verb, pattern, handler in ROUTES:
            match = pattern.match(path)
            if match is None or verb != method:
                continue
            request = Request(method, path, query, form, session, workspace, match)
            try:
                response = handler(request)
            except (MnemoError, PermissionError, sqlite3.Error) as exc:
                status = _status_of(exc) if not isinstance(exc, sqlite3.Error) else HTTPStatus.INTERNAL_SERVER_ERROR
                self._page(
                    status,
                    "Not done",
                    views.error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__),
                    session,
                )
                return
            self._respond(response, session)
            return
        known = any(pattern.match(path) for _, pattern, _ in ROUTES)
        if known:
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"method not allowed", "text/plain")
        else:
            self._page(HTTPStatus.NOT_FOUND, "Not found", views.error(f"No page at {path}."), session)

    def _respond(self, response: Response, session: Session) -> None:
        if response.location is not None:
            self._redirect(response.location)
        elif response.fragment:
            self._send(response.status, response.body.encode("utf-8"), response.content_type)
        else:
            self._page(response.status, response.title, response.body, session, response.active)
