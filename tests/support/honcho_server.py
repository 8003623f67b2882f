"""A local HTTP server implementing the part of Honcho's v3 API that mnemo's Honcho provider uses.

A Honcho server cannot be installed from the package index, so the provider's tests run the real
``honcho-ai`` SDK against this one. Every endpoint, request and response follows Honcho's published API
reference: the OpenAPI document ``docs/v3/openapi.json`` of github.com/plastic-labs/honcho (API version
3.0.12, commit ddbb90e3), whose schema names are given next to each shape below. Requests are validated
strictly: an unknown route, query parameter or body field, a missing required field, a wrong type or a
value outside the reference's bounds is answered 422 with the reference's ``HTTPValidationError`` shape
*and* recorded in :attr:`HonchoReferenceServer.problems`, which the tests assert stays empty. Responses
are checked against the reference's response schemas before they are sent.

Honcho reasons over messages with an LLM in the background; this server stands in for that with the
reasoning level the reference calls ``explicit`` ("directly extracted from messages"): each message of an
observed peer becomes one conclusion about that peer, stored at once. The representation is rendered as
Honcho's server renders it (``src/utils/representation.py``, ``format_as_markdown``: an
``## Explicit Observations`` heading, then ``[timestamp] content`` lines), and semantic search ranks by
shared words instead of embeddings.

``hang`` makes every request wait (until it is cleared or the server stops, then answers 503) and ``fail`` answers every request 500, to
show a provider that a slow or broken Honcho does not hold up the agent.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# -- the reference's shapes --------------------------------------------------------------------------
# A field is (type, required, extra checks); "type" is a Python type or a nested shape. Unknown fields
# are refused.


@dataclass(frozen=True)
class Field:
    kind: Any
    required: bool = False
    nullable: bool = False
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: Any = None  # for lists: the item kind
    values: Any = None  # for maps: the value kind


_ID = r"^[a-zA-Z0-9_-]+$"

# SessionPeerConfig
SESSION_PEER_CONFIG = {
    "observe_me": Field(bool, nullable=True),
    "observe_others": Field(bool, nullable=True),
}
# WorkspaceCreate (configuration: WorkspaceConfiguration, an open object)
WORKSPACE_CREATE = {
    "id": Field(str, required=True, min_length=1, max_length=512, pattern=_ID),
    "metadata": Field(dict),
    "configuration": Field(dict),
}
# SessionCreate
SESSION_CREATE = {
    "id": Field(str, required=True, min_length=1, max_length=512, pattern=_ID),
    "metadata": Field(dict, nullable=True),
    "peers": Field(dict, nullable=True, values=SESSION_PEER_CONFIG),
    "configuration": Field(dict, nullable=True),
}
# MessageCreate (configuration: MessageConfiguration, an open object)
MESSAGE_CREATE = {
    "content": Field(str, required=True, min_length=0, max_length=25000),
    "peer_id": Field(str, required=True),
    "metadata": Field(dict, nullable=True),
    "configuration": Field(dict, nullable=True),
    "created_at": Field(str, nullable=True),
}
# MessageBatchCreate
MESSAGE_BATCH_CREATE = {"messages": Field(list, required=True, min_length=1, max_length=100, items=MESSAGE_CREATE)}
# ConclusionCreate
CONCLUSION_CREATE = {
    "content": Field(str, required=True, min_length=1, max_length=65535),
    "observer_id": Field(str, required=True),
    "observed_id": Field(str, required=True),
    "session_id": Field(str, nullable=True),
}
# ConclusionBatchCreate
CONCLUSION_BATCH_CREATE = {
    "conclusions": Field(list, required=True, min_length=1, max_length=100, items=CONCLUSION_CREATE)
}
# ConclusionQuery
CONCLUSION_QUERY = {
    "query": Field(str, required=True),
    "top_k": Field(int, minimum=1, maximum=100),
    "distance": Field(float, nullable=True, minimum=0.0, maximum=1.0),
    "filters": Field(dict, nullable=True),
}
# GET .../peers/{peer_id}/context query parameters
PEER_CONTEXT_QUERY = {
    "target": Field(str),
    "search_query": Field(str),
    "search_top_k": Field(int, minimum=1, maximum=100),
    "search_max_distance": Field(float, minimum=0.0, maximum=1.0),
    "include_most_frequent": Field(bool),
    "max_conclusions": Field(int, minimum=1, maximum=100),
}

# Response schemas: required fields and their types.
WORKSPACE = {"id": str, "metadata": dict, "configuration": dict, "created_at": str}  # Workspace
SESSION = {
    "id": str,
    "is_active": bool,
    "workspace_id": str,
    "metadata": dict,
    "configuration": dict,
    "created_at": str,
}  # Session
MESSAGE = {  # Message
    "id": str, "content": str, "peer_id": str, "session_id": str, "metadata": dict, "created_at": str,
    "workspace_id": str, "token_count": int,
}  # fmt: skip
CONCLUSION = {
    "id": str,
    "content": str,
    "observer_id": str,
    "observed_id": str,
    "session_id": (str, type(None)),
    "level": str,
    "created_at": str,
}  # Conclusion
PEER_CONTEXT = {
    "peer_id": str,
    "target_id": str,
    "representation": (str, type(None)),
    "peer_card": (list, type(None)),
}  # PeerContext


class Invalid(Exception):
    """A request the reference does not allow: ``loc`` (as in ``ValidationError.loc``) and why."""

    def __init__(self, loc: list[str | int], msg: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc))}: {msg}")
        self.loc = loc
        self.msg = msg


def validate(value: Any, shape: Mapping[str, Field], loc: list[str | int]) -> dict[str, Any]:
    """``value`` checked against ``shape``; raises :class:`Invalid`."""
    if not isinstance(value, dict):
        raise Invalid(loc, f"expected an object, got {type(value).__name__}")
    unknown = sorted(set(value) - set(shape))
    if unknown:
        raise Invalid([*loc, unknown[0]], "field not in the API reference")
    for name, spec in shape.items():
        if name not in value:
            if spec.required:
                raise Invalid([*loc, name], "field required")
            continue
        _check(value[name], spec, [*loc, name])
    return value


def _check(value: Any, spec: Field, loc: list[str | int]) -> None:
    if value is None:
        if not spec.nullable:
            raise Invalid(loc, "must not be null")
        return
    kind = spec.kind
    ok = (
        isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float
        else isinstance(value, int) and not isinstance(value, bool) if kind is int
        else isinstance(value, kind)
    )  # fmt: skip
    if not ok:
        raise Invalid(loc, f"expected {kind.__name__}, got {type(value).__name__}")
    if isinstance(value, (str, list)):
        if spec.min_length is not None and len(value) < spec.min_length:
            raise Invalid(loc, f"shorter than {spec.min_length}")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise Invalid(loc, f"longer than {spec.max_length}")
    if spec.pattern is not None and not re.match(spec.pattern, value):
        raise Invalid(loc, f"does not match {spec.pattern}")
    if spec.minimum is not None and value < spec.minimum or spec.maximum is not None and value > spec.maximum:
        raise Invalid(loc, f"outside [{spec.minimum}, {spec.maximum}]")
    if spec.items is not None:
        for index, item in enumerate(value):
            validate(item, spec.items, [*loc, index])
    if spec.values is not None:
        for key, item in value.items():
            if not re.match(_ID, key):
                raise Invalid([*loc, key], f"peer id does not match {_ID}")
            validate(item, spec.values, [*loc, key])


def _query_params(raw: str, shape: Mapping[str, Field]) -> dict[str, Any]:
    """Query parameters parsed to the reference's types, each at most once."""
    parsed: dict[str, Any] = {}
    for name, values in parse_qs(raw, keep_blank_values=True).items():
        if name not in shape:
            raise Invalid(["query", name], "parameter not in the API reference")
        if len(values) != 1:
            raise Invalid(["query", name], "given more than once")
        text, kind = values[0], shape[name].kind
        try:
            if kind is bool:
                if text not in ("true", "false"):
                    raise ValueError(text)
                parsed[name] = text == "true"
            else:
                parsed[name] = kind(text)
        except ValueError:
            raise Invalid(["query", name], f"expected {kind.__name__}, got {text!r}") from None
    return validate(parsed, shape, ["query"])


def _conforms(value: Any, shape: Mapping[str, Any]) -> None:
    """A response this server is about to send holds exactly the reference's fields and types."""
    assert isinstance(value, dict) and set(value) == set(shape), f"response fields {sorted(value)} != {sorted(shape)}"
    for name, kind in shape.items():
        assert isinstance(value[name], kind), f"response field {name} is {type(value[name]).__name__}"


# -- the state ---------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@dataclass
class Workspace:
    id: str
    created_at: str = field(default_factory=_now)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # peer id -> the peer's SessionPeerConfig per session id
    session_peers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    conclusions: list[dict[str, Any]] = field(default_factory=list)


Handler = Callable[[Workspace, dict[str, str], str, Any], tuple[int, Any]]


class HonchoReferenceServer:
    """The server, on 127.0.0.1 and an ephemeral port; a context manager.

    ``api_key``, when given, must come as ``Authorization: Bearer <key>`` (the reference's HTTPBearer).
    """

    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.workspaces: dict[str, Workspace] = {}
        self.problems: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self.hang = False
        self.fail = False
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("POST", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/sessions/(?P<s>[^/]+)/messages$"), self._add_messages),
            ("POST", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/sessions$"), self._session),
            ("GET", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/peers/(?P<p>[^/]+)/context$"), self._peer_context),
            ("POST", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/conclusions/query$"), self._query_conclusions),
            ("POST", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/conclusions$"), self._create_conclusions),
            ("DELETE", re.compile(r"^/v3/workspaces/(?P<w>[^/]+)/conclusions/(?P<c>[^/]+)$"), self._delete_conclusion),
        ]
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="honcho-reference", daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give the SDK."""
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HonchoReferenceServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Release hanging requests and stop serving."""
        self._stopped.set()
        self._http.shutdown()
        self._http.server_close()

    # -- what the tests read ---------------------------------------------------------------------

    def conclusions_about(self, peer_id: str, workspace: str = "mnemo") -> list[str]:
        """The content of every conclusion a peer holds about itself."""
        with self._lock:
            space = self.workspaces.get(workspace)
            found = [] if space is None else space.conclusions
            return [c["content"] for c in found if c["observer_id"] == c["observed_id"] == peer_id]

    def messages_in(self, session_id: str, workspace: str = "mnemo") -> list[tuple[str, str]]:
        """``(peer_id, content)`` of each message stored in a session, in order."""
        with self._lock:
            space = self.workspaces.get(workspace)
            return (
                []
                if space is None
                else [(m["peer_id"], m["content"]) for m in space.messages if m["session_id"] == session_id]
            )

    # -- endpoints -------------------------------------------------------------------------------

    def ensure_workspace(self, body: Any) -> tuple[int, Any]:
        """POST /v3/workspaces: get or create (WorkspaceCreate -> Workspace)."""
        validate(body, WORKSPACE_CREATE, ["body"])
        space = self.workspaces.setdefault(body["id"], Workspace(body["id"]))
        return 200, _sent(
            {"id": space.id, "metadata": {}, "configuration": {}, "created_at": space.created_at}, WORKSPACE
        )

    def _session(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """POST .../sessions: get or create, adding the peers given (SessionCreate -> Session)."""
        _no_query(query)
        validate(body, SESSION_CREATE, ["body"])
        session = space.sessions.setdefault(body["id"], {"id": body["id"], "created_at": _now()})
        for peer_id, config in (body.get("peers") or {}).items():
            space.session_peers.setdefault(peer_id, {})[body["id"]] = config
        return 200, _sent(
            {"id": session["id"], "is_active": True, "workspace_id": space.id, "metadata": body.get("metadata") or {},
             "configuration": body.get("configuration") or {}, "created_at": session["created_at"]},
            SESSION,
        )  # fmt: skip

    def _add_messages(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """POST .../sessions/{session_id}/messages (MessageBatchCreate -> 201 list[Message]); a message of a
        peer observed in the session (``observe_me`` unset or true) becomes an explicit conclusion about it."""
        _no_query(query)
        validate(body, MESSAGE_BATCH_CREATE, ["body"])
        session_id = path["s"]
        if session_id not in space.sessions:
            raise Invalid(["path", "session_id"], "no such session (create it first)")
        stored = []
        for item in body["messages"]:
            message = {
                "id": uuid.uuid4().hex, "content": item["content"], "peer_id": item["peer_id"], "session_id": session_id,
                "metadata": item.get("metadata") or {}, "created_at": _now(), "workspace_id": space.id,
                "token_count": len(item["content"].split()),
            }  # fmt: skip
            space.messages.append(message)
            stored.append(_sent(message, MESSAGE))
            observed = space.session_peers.get(item["peer_id"], {}).get(session_id, {}).get("observe_me")
            if observed is not False and item["content"].strip():
                self._conclude(space, item["content"], item["peer_id"], item["peer_id"], session_id)
        return 201, stored

    def _peer_context(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """GET .../peers/{peer_id}/context (query parameters as the reference lists them -> PeerContext)."""
        if body is not None:
            raise Invalid(["body"], "GET takes no body")
        params = _query_params(query, PEER_CONTEXT_QUERY)
        observer = path["p"]
        target = params.get("target") or observer
        held = [c for c in space.conclusions if c["observer_id"] == observer and c["observed_id"] == target]
        most = params.get("max_conclusions") or 100
        chosen: list[dict[str, Any]] = []
        if params.get("search_query"):
            wanted = _words(params["search_query"])
            scored = sorted(((len(wanted & _words(c["content"])), i) for i, c in enumerate(held)), reverse=True)
            chosen = [held[i] for score, i in scored[: params.get("search_top_k") or 10] if score > 0]
        if params.get("include_most_frequent", True):
            # Every conclusion here was derived once, so the most frequent are simply the latest.
            chosen += [c for c in reversed(held) if c not in chosen]
        chosen = chosen[:most]
        representation = (
            "## Explicit Observations\n\n" + "\n".join(f"[{c['created_at'][:19].replace('T', ' ')}] {c['content']}" for c in chosen)
            if chosen else ""
        )  # fmt: skip
        return 200, _sent(
            {"peer_id": observer, "target_id": target, "representation": representation, "peer_card": None},
            PEER_CONTEXT,
        )

    def _create_conclusions(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """POST .../conclusions (ConclusionBatchCreate -> 201 list[Conclusion])."""
        _no_query(query)
        validate(body, CONCLUSION_BATCH_CREATE, ["body"])
        made = []
        for item in body["conclusions"]:
            session_id = item.get("session_id")
            if session_id is not None and session_id not in space.sessions:
                raise Invalid(["body", "session_id"], "no such session")
            made.append(self._conclude(space, item["content"], item["observer_id"], item["observed_id"], session_id))
        return 201, made

    def _query_conclusions(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """POST .../conclusions/query (ConclusionQuery -> list[Conclusion]); filters on observer and observed."""
        _no_query(query)
        validate(body, CONCLUSION_QUERY, ["body"])
        filters = body.get("filters") or {}
        unknown = sorted(set(filters) - {"observer_id", "observed_id", "session_id", "level"})
        if unknown:
            raise Invalid(["body", "filters", unknown[0]], "filter this server does not implement")
        held = [c for c in space.conclusions if all(c.get(k) == v for k, v in filters.items())]
        wanted = _words(body["query"])
        scored = sorted(((len(wanted & _words(c["content"])), i) for i, c in enumerate(held)), reverse=True)
        return 200, [held[i] for score, i in scored[: body.get("top_k", 10)] if score > 0]

    def _delete_conclusion(self, space: Workspace, path: dict[str, str], query: str, body: Any) -> tuple[int, Any]:
        """DELETE .../conclusions/{conclusion_id} (-> 204)."""
        _no_query(query)
        if body is not None:
            raise Invalid(["body"], "DELETE takes no body")
        before = len(space.conclusions)
        space.conclusions[:] = [c for c in space.conclusions if c["id"] != path["c"]]
        if len(space.conclusions) == before:
            raise Invalid(["path", "conclusion_id"], "no such conclusion")
        return 204, None

    def _conclude(
        self, space: Workspace, content: str, observer: str, observed: str, session_id: str | None
    ) -> dict[str, Any]:
        conclusion = {
            "id": uuid.uuid4().hex, "content": content, "observer_id": observer, "observed_id": observed,
            "session_id": session_id, "level": "explicit", "created_at": _now(),
        }  # fmt: skip
        space.conclusions.append(conclusion)
        return _sent(conclusion, CONCLUSION)

    # -- HTTP ------------------------------------------------------------------------------------

    def _serve(self, method: str, target: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any]:
        parts = urlsplit(target)
        with self._lock:
            self.requests.append((method, parts.path))
        if self.hang:
            while self.hang and not self._stopped.wait(0.02):
                pass
            return 503, {"detail": "the request was held and then let go"}
        if self.fail:
            return 500, {"detail": "internal error (the test asked for it)"}
        if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, {"detail": "Not authenticated"}
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError as exc:
            return self._invalid(method, parts.path, Invalid(["body"], f"not JSON: {exc}"))
        try:
            with self._lock:
                if method == "POST" and parts.path == "/v3/workspaces":
                    _no_query(parts.query)
                    return self.ensure_workspace(body)
                for verb, pattern, handler in self._routes:
                    match = pattern.match(parts.path)
                    if match and verb == method:
                        space = self.workspaces.get(match["w"])
                        if space is None:
                            raise Invalid(["path", "workspace_id"], "no such workspace (POST /v3/workspaces first)")
                        return handler(space, match.groupdict(), parts.query, body)
        except Invalid as problem:
            return self._invalid(method, parts.path, problem)
        problem = f"{method} {parts.path}: not an endpoint this server implements"
        self.problems.append(problem)
        return 404, {"detail": problem}

    def _invalid(self, method: str, path: str, problem: Invalid) -> tuple[int, Any]:
        self.problems.append(f"{method} {path}: {problem}")
        # HTTPValidationError
        return 422, {"detail": [{"loc": problem.loc, "msg": problem.msg, "type": "value_error"}]}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, payload = server._serve(self.command, self.path, self.headers, raw)
                data = b"" if payload is None else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    if data:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a hang test): nothing to answer

            do_GET = do_POST = do_DELETE = do_PUT = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return _Handler


def _no_query(query: str) -> None:
    if query:
        raise Invalid(["query"], f"this endpoint takes no query parameters, got {query!r}")


def _sent(value: dict[str, Any], shape: Mapping[str, Any]) -> dict[str, Any]:
    _conforms(value, shape)
    return value
