"""What each URL does: read through the user's :class:`~mnemo.ui.workspace.Workspace`, render a view, or make
one change through the tier that owns it and redirect (POST, then GET).

A route receives a :class:`Request` whose session the server has already checked (and, for a POST, whose
origin and CSRF token); the scope it reads is the session's user with the agent and channel the browser
chose, so no parameter of a request can name another user.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

from ..archive.base import SessionNotFound
from ..curated.entries import joined_length
from ..curated.ops import Add, Remove, Replace
from ..curated.store import TARGETS
from ..doctor import diagnose
from ..errors import InvalidArgument
from ..graph.browse import MemoryFilter, disputed_among, maintenance_state, page, subjects
from ..graph.extraction import source_messages
from ..graph.maintenance import maintenance_log
from ..graph.review import ReviewItem, WriteKind
from ..review import approve
from ..scope import Scope
from . import review_views, views
from .auth import Session
from .layout import scope_label, url
from .workspace import Workspace

PAGE_SIZE = 50
# A search shows recall's best SEARCH_LIMIT first and each "more" asks for that many more, up to what
# MemoryGraph.recall returns at most: recall's cost grows with its limit (at 100k memories a search for 20
# takes about two thirds of one for 50), and the first screen is what most searches need.
SEARCH_LIMIT = 20
SEARCH_MOST = 100
MESSAGES_PER_PAGE = 200
REVIEW_LIMIT = 200
DECIDED_SHOWN = 10


@dataclass
class Request:
    """One checked request: its path, query and form fields, and whose it is."""

    method: str
    path: str
    query: dict[str, list[str]]
    form: dict[str, list[str]]
    session: Session
    workspace: Workspace
    match: re.Match[str] | None = None

    def arg(self, name: str, default: str = "") -> str:
        """A query (GET) or form (POST) field, first value, stripped."""
        values = (self.form if self.method == "POST" else self.query).get(name)
        return values[0].strip() if values else default

    def param(self, name: str) -> str:
        """A part of the path the route captured, percent-decoded."""
        assert self.match is not None
        return unquote(self.match[name])

    def args(self, name: str) -> list[str]:
        return [v for v in self.query.get(name, []) if v]

    @property
    def scope(self) -> Scope:
        return self.workspace.scope(*self.session.view)


@dataclass
class Response:
    """A page (``body``) or a redirect (``location``)."""

    status: int = 200
    body: str = ""
    title: str = ""
    active: str = ""
    location: str | None = None
    content_type: str = "text/html; charset=utf-8"
    fragment: bool = False


def redirect(location: str, note: str | None = None, request: Request | None = None) -> Response:
    if note and request is not None:
        request.session.flash.append(note)
    return Response(303, location=location)


def _int(request: Request, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    text = request.arg(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgument(name, f"must be a whole number, got {text!r}") from None
    if value < minimum:
        raise InvalidArgument(name, f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise InvalidArgument(name, f"must be at most {maximum}")
    return value


def _day(text: str, name: str, end: bool = False) -> float | None:
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidArgument(name, f"must be a date YYYY-MM-DD, got {text!r}") from None
    return day.timestamp() + (86_399.999 if end else 0.0)


# -- pages ----------------------------------------------------------------------------------------------


def overview(request: Request) -> Response:
    graph = request.workspace.graph(request.scope)
    entries = request.workspace.curated_entries()
    store = request.workspace.curated
    curated = {t: (len(e), joined_length(e), store.char_limit(t)) for t, e in entries.items()}
    pending = request.workspace.review_queue(request.scope).pending_count()
    body = views.overview(curated, maintenance_state(graph), request.scope, pending)
    return Response(body=body, title="Overview", active="/")


def counts(request: Request) -> Response:
    stats = request.workspace.graph(request.scope).stats()
    messages = request.workspace.archive(request.scope).count_messages()
    return Response(body=views.counts(stats, messages), fragment=True)


def doctor(request: Request) -> Response:
    settings = request.workspace.settings
    report = diagnose(
        settings.home, user_id=settings.user_id, agent_id=request.scope.agent_id, channel_id=request.scope.channel_id
    )
    return Response(body=views.doctor(report), fragment=True)


def scope_page(request: Request) -> Response:
    body = views.scopes(request.scope, request.workspace.scopes(), request.session.csrf)
    return Response(body=body, title="Scope")


def choose_scope(request: Request) -> Response:
    chosen = request.workspace.scope(request.arg("agent"), request.arg("channel"))  # the user part is the session's
    request.session.view = (chosen.agent_id, chosen.channel_id)
    return redirect("/", f"Now viewing {scope_label(chosen)}.", request)


def memories(request: Request) -> Response:
    graph = request.workspace.graph(request.scope)
    since, until = request.arg("since"), request.arg("until")
    where = MemoryFilter.parse(
        types=request.args("type"), status=request.arg("status"), subject=request.arg("subject"),
        source=request.arg("source"), since=_day(since, "since"), until=_day(until, "until", end=True),
    )  # fmt: skip
    query = request.arg("q")
    filters = views.memory_filters(query, where, subjects(graph), since, until)
    if query:
        # The same hybrid recall an agent gets, history and forgotten memories included so the status
        # filter can find them; without a status filter only what recall would serve is listed.
        everything = where.status is not None
        shown = _int(request, "shown", SEARCH_LIMIT, minimum=1, maximum=SEARCH_MOST)
        results = graph.recall(
            query, limit=shown, include_superseded=everything, include_forgotten=everything, touch=False
        )
        disputed = disputed_among(graph, [r.memory.id for r in results])
        kept = [r for r in results if where.admits(r.memory, r.memory.id in disputed)]
        more = None
        if len(results) == shown < SEARCH_MOST:  # recall filled the limit, so it may find more
            kept_query = {k: v[0] for k, v in request.query.items() if v and k != "shown"}
            more = url("/memories", **kept_query, shown=min(shown + SEARCH_LIMIT, SEARCH_MOST))
        return Response(
            body=filters + views.search_results(kept, disputed, query, more), title="Memories", active="/memories"
        )
    number = _int(request, "page", 1, minimum=1)
    found = page(graph, where, offset=(number - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    kept_query = {k: v[0] for k, v in request.query.items() if v and k != "page"}
    return Response(body=filters + views.memory_table(found, kept_query), title="Memories", active="/memories")


def memory(request: Request) -> Response:
    graph = request.workspace.graph(request.scope)
    found = graph.get(request.param("id"))
    edges = graph.associations(found.id)
    others = {}
    for edge in edges:
        other = edge.target_id if edge.source_id == found.id else edge.source_id
        try:
            others[other] = graph.get(other)
        except InvalidArgument:
            continue  # an edge to another scope's memory is not this user's to see
    chain = graph.history(found.id)
    archive = request.workspace.archive(request.scope)
    said = [(s, archive.get_message(s.message_id) if s.message_id is not None else None)
            for s in source_messages(graph, [found.id]).get(found.id, [])]  # fmt: skip
    body = views.memory_detail(
        found, found.id in disputed_among(graph, [found.id]), edges, others, chain, said,
        maintenance_log(graph, found.id), request.session.csrf,
    )  # fmt: skip
    return Response(body=body, title=f"Memory {found.id}", active="/memories")


def recall(request: Request) -> Response:
    query = request.arg("q")
    trace = request.workspace.trace_recall(request.scope, query) if query else None
    return Response(body=views.recall(query, trace), title="Recall debugger", active="/recall")


def curated(request: Request) -> Response:
    entries = request.workspace.curated_entries()
    store = request.workspace.curated
    limits = {t: store.char_limit(t) for t in TARGETS}
    used = {t: joined_length(e) for t, e in entries.items()}
    return Response(
        body=views.curated(entries, limits, used, request.session.csrf), title="Curated memory", active="/curated"
    )


def curated_history(request: Request) -> Response:
    records = list(reversed(request.workspace.curated.history.records()))
    return Response(
        body=views.curated_history(records, request.session.csrf), title="Curated history", active="/curated"
    )


def sessions(request: Request) -> Response:
    archive = request.workspace.archive(request.scope)
    query = request.arg("q")
    if query:
        hits = archive.search_messages(query, limit=50, include_hidden=True)
        return Response(body=views.sessions(query, [], hits, 0, False), title="Sessions", active="/sessions")
    offset = _int(request, "offset", 0)
    listed = archive.list_sessions(limit=PAGE_SIZE + 1, offset=offset, include_hidden=True)
    body = views.sessions("", listed[:PAGE_SIZE], None, offset, len(listed) > PAGE_SIZE)
    return Response(body=body, title="Sessions", active="/sessions")


def conversation(request: Request) -> Response:
    archive = request.workspace.archive(request.scope)
    session_id = request.param("id")
    info = archive.get_session(session_id)
    if info is None:
        raise SessionNotFound(session_id)
    before, after = request.arg("before"), request.arg("after")
    if before:
        messages = archive.messages(
            session_id, before_id=_int(request, "before", 0), limit=MESSAGES_PER_PAGE, newest_first=True
        )
    else:
        messages = archive.messages(
            session_id, after_id=_int(request, "after", 0) if after else None, limit=MESSAGES_PER_PAGE
        )
    earlier = messages[0].id if messages and archive.messages(session_id, before_id=messages[0].id, limit=1) else None
    later = messages[-1].id if messages and archive.messages(session_id, after_id=messages[-1].id, limit=1) else None
    lineage = [s for s in (archive.get_session(i) for i in archive.lineage(session_id)) if s is not None]
    lineage.sort(key=lambda s: s.started_at)
    return Response(
        body=views.conversation(info, messages, lineage, earlier, later),
        title=info.title or f"Session {info.id}",
        active="/sessions",
    )


def prompt(request: Request) -> Response:
    return Response(
        body=views.prompt(request.workspace.prompt_blocks(request.scope)), title="Prompt preview", active="/prompt"
    )


def review(request: Request) -> Response:
    queue = request.workspace.review_queue(request.scope)
    pending = queue.items(limit=REVIEW_LIMIT)
    decided = [item for item in queue.items(None, limit=REVIEW_LIMIT) if item.decided_at is not None]
    body = review_views.review_queue(pending, decided[:DECIDED_SHOWN], request.session.csrf)
    return Response(body=body, title="Review", active="/review")


def review_item(request: Request) -> Response:
    item = request.workspace.review_queue(request.scope).get(request.param("id"))
    return Response(body=review_views.review_item(item, request.session.csrf), title=f"Held write {item.id}", active="/review")


# -- writes ---------------------------------------------------------------------------------------------


def _memory_write(change: Callable[[Any, str, Request], Any], note: str) -> Callable[[Request], Response]:
    def route(request: Request) -> Response:
        graph = request.workspace.graph(request.scope)
        changed = change(graph, request.param("id"), request)
        return redirect(f"/memories/{quote(changed.id, safe='')}", note, request)

    return route


def _edit(graph: Any, memory_id: str, request: Request) -> Any:
    importance = request.arg("importance")
    try:
        weight = float(importance) if importance else None
    except ValueError:
        raise InvalidArgument("importance", f"must be a number between 0 and 1, got {importance!r}") from None
    return graph.replace(memory_id, request.arg("content"), memory_type=request.arg("type") or None,
                         importance=weight, subject=request.arg("subject"))  # fmt: skip


def _restore(graph: Any, memory_id: str, request: Request) -> Any:
    """Undo an edit: the chosen older version's text becomes the newest version (history keeps everything)."""
    version = graph.get(request.arg("version"), field="version")
    if all(v.id != version.id for v in graph.history(memory_id)):
        raise InvalidArgument("version", "is not a version of this memory")
    return graph.replace(memory_id, version.content, memory_type=version.type,
                         importance=version.original_importance, subject=version.subject)  # fmt: skip


def _relate(graph: Any, memory_id: str, request: Request) -> Any:
    weight = request.arg("weight") or "1"
    try:
        value = float(weight)
    except ValueError:
        raise InvalidArgument("weight", f"must be a number between 0 and 1, got {weight!r}") from None
    graph.relate(memory_id, request.arg("target"), request.arg("relation"), value)
    return graph.get(memory_id)


edit = _memory_write(_edit, "Saved as a new version; the old one is kept in its history.")
restore_version = _memory_write(_restore, "Restored: that version's text is the newest version again.")
pin = _memory_write(lambda g, i, r: g.pin(i, r.arg("pinned") == "1"), "Pin changed.")
forget = _memory_write(lambda g, i, r: g.forget(i), "Forgotten: recall no longer finds it.")
unforget = _memory_write(lambda g, i, r: g.unforget(i), "Recalled again.")
relate = _memory_write(_relate, "Related.")

_UI_ORIGIN = {"via": "ui"}


def curated_edit(request: Request) -> Response:
    target = request.arg("target")
    action = request.param("action")
    op = {"add": lambda: Add(request.arg("content")),
          "replace": lambda: Replace("", request.arg("content"), entry_id=request.arg("entry")),
          "remove": lambda: Remove("", entry_id=request.arg("entry"))}[action]()  # fmt: skip
    outcome = request.workspace.curated.apply(target, op, origin=_UI_ORIGIN)
    return redirect(f"/curated#{quote(target, safe='')}", outcome.message, request)


def curated_restore(request: Request) -> Response:
    outcome = request.workspace.curated.restore(
        request.arg("record"), whole=request.arg("whole") == "1", origin=_UI_ORIGIN
    )
    return redirect("/curated/history", outcome.message, request)


def review_approve(request: Request) -> Response:
    digest = request.arg("digest")
    if not digest:  # the page always sends it: an approval here names the exact content it showed
        raise InvalidArgument("digest", "is required: approve from the page that shows the write")
    queue = request.workspace.review_queue(request.scope)
    item = approve(queue, request.param("id"), store=request.workspace.curated, digest=digest)
    return redirect("/review", _approved(item), request)


def _approved(item: ReviewItem) -> str:
    """Where an approved write went: a memory's id, or the curated file and what its store said."""
    if item.kind is WriteKind.GRAPH:
        return f"Approved {item.id}: saved as {item.outcome} (see Memories)."
    return f"Approved {item.id} into {str(item.payload['target']).upper()}.md: {item.outcome}"


def review_reject(request: Request) -> Response:
    item = request.workspace.review_queue(request.scope).reject(request.param("id"))
    return redirect("/review", f"Rejected {item.id}: it will never be applied (kept as rejected).", request)


ROUTES: tuple[tuple[str, re.Pattern[str], Callable[[Request], Response]], ...] = tuple(
    (method, re.compile(f"^{pattern}$"), handler)
    for method, pattern, handler in (
        ("GET", "/", overview),
        ("GET", "/overview/counts", counts),
        ("GET", "/doctor", doctor),
        ("GET", "/scope", scope_page),
        ("POST", "/scope", choose_scope),
        ("GET", "/memories", memories),
        ("GET", "/memories/(?P<id>[^/]+)", memory),
        ("POST", "/memories/(?P<id>[^/]+)/edit", edit),
        ("POST", "/memories/(?P<id>[^/]+)/restore", restore_version),
        ("POST", "/memories/(?P<id>[^/]+)/pin", pin),
        ("POST", "/memories/(?P<id>[^/]+)/forget", forget),
        ("POST", "/memories/(?P<id>[^/]+)/unforget", unforget),
        ("POST", "/memories/(?P<id>[^/]+)/relate", relate),
        ("GET", "/recall", recall),
        ("GET", "/curated", curated),
        ("GET", "/curated/history", curated_history),
        ("POST", "/curated/(?P<action>add|replace|remove)", curated_edit),
        ("POST", "/curated/restore", curated_restore),
        ("GET", "/sessions", sessions),
        ("GET", "/sessions/(?P<id>[^/]+)", conversation),
        ("GET", "/prompt", prompt),
        ("GET", "/review", review),
        ("GET", "/review/(?P<id>[^/]+)", review_item),
        ("POST", "/review/(?P<id>[^/]+)/approve", review_approve),
        ("POST", "/review/(?P<id>[^/]+)/reject", review_reject),
    )
)
