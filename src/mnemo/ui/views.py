"""The UI's pages as HTML: each function takes what a route read through mnemo's own calls and renders it.
Nothing here reads or writes memory."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..archive.records import Hit, SessionInfo, StoredMessage
from ..archive.search import HIGHLIGHT
from ..curated.entries import entry_id
from ..curated.history import HistoryRecord
from ..doctor import Report
from ..graph.browse import MaintenanceState, MemoryFilter, MemoryPage, Status, statuses
from ..graph.extraction import SourceMessage
from ..graph.recall import RecallResult
from ..graph.types import Association, Memory, MemoryType, Relation
from ..recollection import RecalledMessage
from ..scope import Scope
from .layout import bar, chip, esc, form, options, scope_label, table, url, when
from .workspace import RecallTrace

EXCERPT = 160


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def session_path(session_id: str) -> str:
    """The URL path of a session's page (an id may hold any character, ``/`` and ``#`` included)."""
    return f"/sessions/{quote(session_id, safe='')}"


def memory_link(memory: Memory, limit: int = EXCERPT) -> str:
    return f'<a href="/memories/{esc(memory.id)}">{esc(excerpt(memory.content, limit))}</a>'


def status_chips(memory: Memory, disputed: bool) -> str:
    return " ".join(chip(s.value, s.value) for s in statuses(memory, disputed))


# -- overview ------------------------------------------------------------------------------------------


def overview(
    curated: Mapping[str, tuple[int, int, int]], maintenance: MaintenanceState, scope: Scope, pending: int
) -> str:
    """Curated usage and maintenance at once; the memory counts and the doctor's findings load after the
    page (counting a large graph, and the doctor's checks, take longer than a page should)."""
    usage = "".join(
        f'<section class="card"><h3>{esc(target.upper())}.md</h3>{bar(used, limit)}'
        f'<p class="small">{count} {"entry" if count == 1 else "entries"}</p></section>'
        for target, (count, used, limit) in curated.items()
    )
    log = table(
        ["when", "action", "memory", "detail"],
        [[esc(e["at"]), esc(e["action"]), f'<a href="/memories/{esc(e["memory"])}">{esc(e["memory"])}</a>', esc(e["detail"])]
         for e in maintenance.recent],
        empty="Maintenance has not changed anything yet.",
    )  # fmt: skip
    running = " (a pass is under way)" if maintenance.in_progress else ""
    return (
        f'<p class="lede">Scope in view: <strong>{esc(scope_label(scope))}</strong> (<a href="/scope">change</a>)</p>'
        '<div id="counts" data-src="/overview/counts"><p class="muted">Counting memories…</p></div>'
        f'<h2>Curated memory</h2><div class="grid">{usage}</div>'
        f"<h2>Maintenance</h2><p>Last pass: {when(maintenance.last_pass_at)}{esc(running)}</p>{log}"
        f"<h2>Review</h2>{_awaiting(pending)}"
        '<h2>Health</h2><div id="doctor" data-src="/doctor"><p class="muted">Running mnemo doctor…</p></div>'
    )


def _awaiting(pending: int) -> str:
    if not pending:
        return '<p class="muted">No write awaits <a href="/review">your review</a>.</p>'
    writes = "write awaits" if pending == 1 else "writes await"
    return f'<p class="note"><a href="/review" id="awaiting">{pending:,} {writes} your review</a>.</p>'


def counts(stats: Mapping[str, Any], messages: int) -> str:
    """:meth:`MemoryGraph.stats` of the scope in view and its archived messages, as a fragment of the overview."""
    states = table(
        ["state", "memories"],
        [[esc(name), f"{stats[name]:,}"] for name in ("active", "superseded", "forgotten")]
        + [["<strong>total</strong>", f"<strong>{stats['memories']:,}</strong>"]],
    )
    types = table(
        ["type (active)", "memories"],
        [[f'<a href="{url("/memories", type=kind, status="active")}">{esc(kind)}</a>', f"{count:,}"]
         for kind, count in sorted(stats["by_type"].items(), key=lambda kv: -kv[1])],
        empty="No active memories.",
    )  # fmt: skip
    pending = stats.get("pending_embeddings")
    waiting = f'<p class="muted small">{pending:,} memories waiting for their vector.</p>' if pending else ""
    return (
        f'<div class="grid"><section class="card"><h2>Memories</h2>{states}{waiting}</section>'
        f'<section class="card"><h2>By type</h2>{types}</section></div>'
        f'<p>Session archive: <a href="/sessions">{messages:,} messages</a>.</p>'
    )


def doctor(report: Report) -> str:
    """``mnemo doctor``'s findings as a fragment."""
    if not report.findings:
        return f'<p class="ok">All {len(report.checks)} checks passed.</p>'
    rows = [[chip(f.severity.value, f.severity.value), esc(f.problem), esc(f.fix)] for f in report.findings]
    return table(["severity", "problem", "fix"], rows)


def scopes(current: Scope, available: Sequence[Scope], csrf: str) -> str:
    """The scopes of this user to choose from."""
    rows = []
    for scope in available:
        body = f'<input type="hidden" name="agent" value="{esc(scope.agent_id)}"><input type="hidden" name="channel" value="{esc(scope.channel_id)}">'
        action = "in view" if scope == current else form("/scope", csrf, body, label="View")
        rows.append([esc(scope.agent_id or "(none)"), esc(scope.channel_id or "(none)"), action])
    return "<p>Only your own scopes are listed.</p>" + table(["agent", "channel", ""], rows)


# -- memories ------------------------------------------------------------------------------------------


def memory_filters(query: str, where: MemoryFilter, subjects: Sequence[str], since: str, until: str) -> str:
    types = options([t.value for t in MemoryType], [t.value for t in where.types], blank="any type")
    status = options([s.value for s in Status], where.status.value if where.status else "", blank="any status")
    subject = options(subjects[:200], where.subject, blank="anyone")
    return (
        '<form method="get" action="/memories" class="filters" role="search">'
        f'<label>Search <input type="search" name="q" value="{esc(query)}" placeholder="what the user might say" data-search></label>'
        f'<label>Type <select name="type">{types}</select></label>'
        f'<label>Status <select name="status">{status}</select></label>'
        f'<label>Subject <select name="subject">{subject}</select></label>'
        f'<label>Source <input name="source" value="{esc(where.source)}" size="12"></label>'
        f'<label>From <input type="date" name="since" value="{esc(since)}"></label>'
        f'<label>To <input type="date" name="until" value="{esc(until)}"></label>'
        '<button type="submit">Filter</button></form>'
    )


def _memory_row(memory: Memory, disputed: bool, score: float | None = None, found_by: str = "") -> list[str]:
    cells = [
        memory_link(memory),
        chip(memory.type.value, "type"),
        status_chips(memory, disputed),
        f"{memory.importance:.2f}",
        esc(memory.subject),
        when(memory.created_at),
    ]
    if score is not None:
        cells += [f"{score:.3f}", esc(found_by)]
    return cells


_COLUMNS = ["memory", "type", "status", "importance", "subject", "created"]


def memory_table(found: MemoryPage, query: Mapping[str, str]) -> str:
    rows = [_memory_row(m, m.id in found.disputed) for m in found.memories]
    first = found.offset + 1 if found.memories else 0
    pager = []
    if found.offset > 0:
        pager.append(
            f'<a rel="prev" href="{url("/memories", **{**query, "page": found.offset // found.limit})}">← newer</a>'
        )
    if found.has_more:
        pager.append(
            f'<a rel="next" href="{url("/memories", **{**query, "page": found.offset // found.limit + 2})}">older →</a>'
        )
    summary = f'<p class="muted">Newest first; {first:,}–{found.offset + len(found.memories):,} shown.</p>'
    return (
        summary
        + table(_COLUMNS, rows, empty="No memory matches.", cls="memories")
        + f'<nav class="pager">{" ".join(pager)}</nav>'
    )


def search_results(results: Sequence[RecallResult], disputed: frozenset[str], query: str, more: str | None) -> str:
    """Recall's results, best first; ``more`` (an escaped link) asks recall for more of them."""
    rows = [_memory_row(r.memory, r.memory.id in disputed, r.score, " + ".join(sorted(r.channels))) for r in results]
    head = (
        f'<p class="muted">{len(rows)} found by recall for “{esc(query)}”, best first (the filters apply to them).</p>'
    )
    pager = f'<nav class="pager"><a rel="next" href="{more}">more results →</a></nav>' if more else ""
    return head + table([*_COLUMNS, "score", "found by"], rows, empty="Recall found nothing.", cls="memories") + pager


# -- one memory ----------------------------------------------------------------------------------------


def _importance_chart(chain: Sequence[Memory], memory: Memory) -> str:
    """Importance over time: each version's written importance, then this memory's now (after decay)."""
    points = [(m.created_at, m.original_importance) for m in reversed(chain)]
    moment = memory.decayed_at or memory.updated_at
    points.append((max(moment, points[-1][0]), memory.importance))
    start, end = points[0][0], points[-1][0]
    if end > start:
        xs = [10 + 280 * (t - start) / (end - start) for t, _ in points]
    else:  # all at one moment (never decayed, one version): spread them so the line shows
        xs = [10 + 280 * i / (len(points) - 1) for i in range(len(points))]
    coords = [(x, 70 - 60 * value) for x, (_, value) in zip(xs, points)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{v:.2f}</title></circle>'
        for (x, y), (_, v) in zip(coords, points)
    )
    return (
        '<svg class="spark" viewBox="0 0 300 80" role="img" aria-label="importance over time">'
        '<line x1="10" y1="70" x2="290" y2="70" class="axis"/><line x1="10" y1="10" x2="290" y2="10" class="axis"/>'
        f'<polyline points="{line}"/>{dots}</svg>'
        f'<p class="small muted">written at {memory.original_importance:.2f}; now {memory.importance:.2f}'
        f"{' (pinned: never decays)' if memory.pinned else ''}; last decayed {when(memory.decayed_at)}</p>"
    )


def _edge_graph(memory: Memory, edges: Sequence[Association], others: Mapping[str, Memory]) -> str:
    """This memory in the middle, its neighbours around it; each node links to its own page."""
    neighbours = list(dict.fromkeys(e.target_id if e.source_id == memory.id else e.source_id for e in edges))[:16]
    if not neighbours:
        return '<p class="muted">No edges.</p>'
    cx, cy, radius = 160, 110, 85
    place = {mid: (cx + radius * math.cos(2 * math.pi * i / len(neighbours) - math.pi / 2),
                   cy + radius * math.sin(2 * math.pi * i / len(neighbours) - math.pi / 2))
             for i, mid in enumerate(neighbours)}  # fmt: skip
    lines, nodes = [], []
    for edge in edges:
        other = edge.target_id if edge.source_id == memory.id else edge.source_id
        if other not in place:
            continue
        x, y = place[other]
        lines.append(
            f'<line x1="{cx}" y1="{cy}" x2="{x:.0f}" y2="{y:.0f}" class="rel-{esc(edge.relation.value)}"><title>{esc(edge.relation.value)}</title></line>'
        )
    for mid, (x, y) in place.items():
        label = excerpt(others[mid].content, 22) if mid in others else mid
        nodes.append(
            f'<a href="/memories/{esc(mid)}"><circle cx="{x:.0f}" cy="{y:.0f}" r="7"/>'
            f'<text x="{x:.0f}" y="{y + 19:.0f}" text-anchor="middle">{esc(label)}</text><title>{esc(label)}</title></a>'
        )
    centre = f'<circle cx="{cx}" cy="{cy}" r="10" class="centre"/>'
    return f'<svg class="edges" viewBox="0 0 320 230" role="img" aria-label="associated memories">{"".join(lines)}{centre}{"".join(nodes)}</svg>'


def memory_detail(memory: Memory, disputed: bool, edges: Sequence[Association], others: Mapping[str, Memory],
                  chain: Sequence[Memory], said_in: Sequence[tuple[SourceMessage, StoredMessage | None]],
                  maintenance: Sequence[Mapping[str, Any]], csrf: str) -> str:  # fmt: skip
    """A memory's page: what it says, its state, edges, where it was said, its versions, and the edits."""
    facts = table(["", ""], [
        ["type", chip(memory.type.value, "type")],
        ["status", status_chips(memory, disputed)],
        ["subject", esc(memory.subject) or '<span class="muted">none</span>'],
        ["source", f'<a href="{url("/memories", source=memory.source)}">{esc(memory.source)}</a>' if memory.source else '<span class="muted">none</span>'],
        ["created", when(memory.created_at)],
        ["updated", when(memory.updated_at)],
        ["last recalled", f"{when(memory.last_accessed_at)} ({memory.access_count} times)"],
        ["id", f"<code>{esc(memory.id)}</code>"],
    ], cls="facts")  # fmt: skip
    newer = ""
    if memory.superseded_by:
        newer = f'<p class="note">A newer version replaces this one: <a href="/memories/{esc(memory.superseded_by)}">see it</a>.</p>'
    edge_rows = []
    for e in edges:
        other = e.target_id if e.source_id == memory.id else e.source_id
        arrow = f"→ {e.relation.value}" if e.source_id == memory.id else f"← {e.relation.value}"
        target = memory_link(others[other], 90) if other in others else f"<code>{esc(other)}</code>"
        edge_rows.append([esc(arrow), target, f"{e.weight:.2f}", esc(e.origin or "")])
    said_rows = []
    for source, message in said_in:
        where = esc(session_path(source.session_id)) + (f"#m{source.message_id}" if source.message_id else "")
        text = (
            esc(excerpt(message.text, 200))
            if message is not None
            else '<span class="muted">(not in the archive)</span>'
        )
        said_rows.append(
            [f'<a href="{where}" class="said">{esc(source.session_id)}</a>', esc(message.role if message else ""), text]
        )
    versions = []
    for version in chain:
        if version.id == memory.id:
            action = "this page"
        elif version.superseded_by is not None and chain[0].id != version.id:
            body = f'<input type="hidden" name="version" value="{esc(version.id)}">'
            action = form(f"/memories/{chain[0].id}/restore", csrf, body, label="Restore this version")
        else:
            action = ""
        versions.append(
            [
                f'<a href="/memories/{esc(version.id)}">{esc(excerpt(version.content, 120))}</a>',
                when(version.created_at),
                f"{version.original_importance:.2f}",
                action,
            ]
        )
    undo = ""
    if memory.superseded_by is None and len(chain) > 1 and chain[0].id == memory.id:
        body = f'<input type="hidden" name="version" value="{esc(chain[1].id)}">'
        undo = form(f"/memories/{memory.id}/restore", csrf, body, label="Undo last edit", kind="secondary")
    log = table(
        ["when", "action", "other", "detail"],
        [[esc(e["at"]), esc(e["action"]), esc(e["other"] or ""), esc(e["detail"])] for e in maintenance],
        empty="Maintenance has not touched it.",
    )
    return (
        f'<blockquote class="content">{esc(memory.content)}</blockquote>{newer}'
        f'<div class="grid"><section class="card">{facts}</section>'
        f'<section class="card"><h2>Importance over time</h2>{_importance_chart(chain, memory)}</section></div>'
        f"<h2>Where it was said</h2>{table(['session', 'role', 'message'], said_rows, empty='Written directly, not extracted from a conversation.')}"
        f'<h2>Associations</h2><div class="grid"><div>{_edge_graph(memory, edges, others)}</div>'
        f"<div>{table(['relation', 'memory', 'weight', 'origin'], edge_rows, empty='No edges.')}</div></div>"
        f"<h2>Versions</h2>{table(['content', 'written', 'importance', ''], versions)}"
        f'<section class="actions card"><h2>Change it</h2>{undo}{_edit_forms(memory, csrf)}</section>'
        f"<h2>Maintenance</h2>{log}"
    )


def _edit_forms(memory: Memory, csrf: str) -> str:
    base = f"/memories/{memory.id}"
    pin = form(
        f"{base}/pin",
        csrf,
        f'<input type="hidden" name="pinned" value="{0 if memory.pinned else 1}">',
        label="Unpin" if memory.pinned else "Pin",
    )
    if memory.forgotten:
        forget = form(f"{base}/unforget", csrf, "", label="Unforget")
    else:
        forget = form(
            f"{base}/forget",
            csrf,
            "",
            label="Forget",
            kind="danger",
            confirm="Forget this memory? Recall will no longer find it (you can unforget it).",
        )
    edit = ""
    if memory.superseded_by is None:
        edit = (
            f'<form method="post" action="{esc(base)}/edit" class="edit"><input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<label>Content <textarea name="content" rows="3" required>{esc(memory.content)}</textarea></label>'
            f'<div class="row"><label>Type <select name="type">{options([t.value for t in MemoryType], memory.type.value)}</select></label>'
            f'<label>Importance <input type="number" name="importance" min="0" max="1" step="0.05" value="{memory.original_importance:.2f}"></label>'
            f'<label>Subject <input name="subject" value="{esc(memory.subject)}"></label>'
            '<button type="submit">Save as new version</button></div></form>'
        )
    relate = (
        f'<form method="post" action="{esc(base)}/relate" class="row"><input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<label>Relate to <input name="target" placeholder="memory id" required size="18"></label>'
        f'<label>as <select name="relation">{options([r.value for r in Relation], Relation.RELATED_TO.value)}</select></label>'
        '<label>weight <input type="number" name="weight" min="0" max="1" step="0.1" value="1"></label>'
        '<button type="submit">Relate</button></form>'
    )
    return f'{edit}<div class="row">{pin}{forget}</div>{relate}'


# -- recall debugger -----------------------------------------------------------------------------------


def recall(query: str, trace: RecallTrace | None) -> str:
    """The recall debugger: the message with its context block, then every candidate and its story."""
    ask = (
        '<form method="get" action="/recall" role="search" class="filters">'
        f'<label>The user says <input type="search" name="q" value="{esc(query)}" size="60" data-search autofocus></label>'
        '<button type="submit">Recall</button></form>'
    )
    if trace is None:
        return (
            ask
            + '<p class="muted">Type what the user might say: you will see the message exactly as the model would get it, and why each memory was or was not in it.</p>'
        )
    channels = sorted({name for c in trace.candidates if c.result is not None for name in c.result.channels})
    rows = []
    for c in trace.candidates:
        verdict = (
            '<span class="chip in">in context</span>'
            if c.in_context
            else f'<span class="muted">{esc(c.left_out or "")}</span>'
        )
        if isinstance(c.item, RecalledMessage):
            where = f"{esc(session_path(c.item.session_id))}#m{c.item.message_id}"
            what = f'{chip("message")} <a href="{where}">{esc(c.item.role)}: {esc(excerpt(c.item.passage, 100))}</a>'
            rows.append([str(c.position), what, *["–" for _ in channels], f"{c.item.score:.3f}", "", verdict])
            continue
        memory = c.result.memory if c.result is not None else None
        ranks = [
            f"#{c.ranks[ch]} ({c.result.channels[ch]:.2f})" if ch in c.ranks and c.result else "–" for ch in channels
        ]
        decay = "" if memory is None or memory.base_importance is None else f" (from {memory.original_importance:.2f})"
        link = f'<a href="/memories/{esc(c.item.id)}">{esc(excerpt(c.item.content, 100))}</a>'
        rows.append(
            [
                str(c.position),
                f"{chip('memory')} {link}",
                *ranks,
                f"{c.item.score:.3f}",
                f"{c.item.importance:.2f}{esc(decay)}",
                verdict,
            ]
        )
    headers = [
        "#",
        "memory or earlier message",
        *[f"{ch} rank" for ch in channels],
        "merged score",
        "importance",
        "verdict",
    ]
    return (
        ask + f'<h2>What the model gets</h2><pre class="prompt" id="prepared">{esc(trace.message)}</pre>'
        f"<p class=\"small muted\">On a new session's first turn: memories and earlier sessions' messages ranked together, at most "
        f"{trace.enrich_limit} within {trace.context_chars:,} characters, less what the curated snapshot already shows.</p>"
        f"<h2>Candidates</h2>{table(headers, rows, empty='Recall found no candidate.', cls='candidates')}"
    )


# -- curated -------------------------------------------------------------------------------------------


def curated(
    entries: Mapping[str, tuple[str, ...]], limits: Mapping[str, int], used: Mapping[str, int], csrf: str
) -> str:
    """Both curated targets with usage bars, each entry editable, and a form to add one."""
    parts = []
    for target, items in entries.items():
        rows = []
        for index, entry in enumerate(items):
            old = f'<input type="hidden" name="target" value="{esc(target)}"><input type="hidden" name="entry" value="{esc(entry_id(entry))}">'
            edit = (
                f'<form method="post" action="/curated/replace" class="entry"><input type="hidden" name="csrf" value="{esc(csrf)}">{old}'
                f'<textarea name="content" rows="2" aria-label="entry {index + 1}">{esc(entry)}</textarea><button type="submit">Save</button></form>'
            )
            remove = form("/curated/remove", csrf, old, label="Remove", kind="danger")
            rows.append([edit, remove])
        add = (
            f'<form method="post" action="/curated/add" class="entry"><input type="hidden" name="csrf" value="{esc(csrf)}">'
            f'<input type="hidden" name="target" value="{esc(target)}"><textarea name="content" rows="2" aria-label="new {esc(target)} entry" placeholder="a new entry"></textarea>'
            '<button type="submit">Add</button></form>'
        )
        parts.append(
            f'<section class="card curated" id="{esc(target)}"><h2>{esc(target.upper())}.md</h2>{bar(used[target], limits[target])}'
            f"{table(['entry', ''], rows, empty='No entries.')}{add}</section>"
        )
    return '<p><a href="/curated/history">History and restore →</a></p>' + "".join(parts)


def _diff(record: HistoryRecord) -> str:
    removed = "".join(f'<li class="del"><span class="sr">removed: </span>{esc(e)}</li>' for e in record.removed)
    added = "".join(f'<li class="add"><span class="sr">added: </span>{esc(e)}</li>' for e in record.added)
    return (
        f'<ul class="diff">{removed}{added}</ul>'
        if removed or added
        else '<p class="muted small">no change in entries</p>'
    )


def curated_history(records: Sequence[HistoryRecord], csrf: str) -> str:
    """Every curated write, newest first, as a timeline of diffs with one-click restore."""
    items = []
    for record in records:
        origin = ", ".join(f"{k}: {v}" for k, v in record.origin.items())
        restore = ""
        if record.removed:
            restore = form(
                "/curated/restore",
                csrf,
                f'<input type="hidden" name="record" value="{esc(record.id)}">',
                label="Restore what this removed",
            )
        whole = form("/curated/restore", csrf, f'<input type="hidden" name="record" value="{esc(record.id)}"><input type="hidden" name="whole" value="1">',
                     label="Set back to before this", kind="secondary", confirm="Set the file back to its entries before this write?")  # fmt: skip
        items.append(
            f'<li class="event"><div class="when">{when(record.time)}</div><div><strong>{esc(record.target.upper())}.md</strong> · {esc(record.operation)}'
            f'{f" · <span class=muted>{esc(origin)}</span>" if origin else ""}{_diff(record)}<div class="row">{restore}{whole}</div></div></li>'
        )
    if not items:
        return '<p class="muted">No curated writes yet.</p>'
    return f'<ol class="timeline">{"".join(items)}</ol>'


# -- sessions ------------------------------------------------------------------------------------------


def _session_row(info: SessionInfo) -> list[str]:
    return [
        f'<a href="{esc(session_path(info.id))}">{esc(info.title or info.id)}</a>',
        esc(info.source),
        when(info.started_at),
        f"{info.message_count:,}",
    ]


def sessions(query: str, listed: Sequence[SessionInfo], hits: Sequence[Hit] | None, offset: int, more: bool) -> str:
    """The archive: a search over every message, or the sessions newest first."""
    ask = (
        '<form method="get" action="/sessions" role="search" class="filters">'
        f'<label>Search the archive <input type="search" name="q" value="{esc(query)}" size="50" data-search></label>'
        '<button type="submit">Search</button></form>'
    )
    if hits is not None:
        rows = [[f'<a href="{esc(session_path(h.session.id))}#m{h.message.id}">{esc(h.session.title or h.session.id)}</a>', esc(h.message.role),
                 when(h.message.created_at), f'<span class="snippet">{_snippet(h.snippet)}</span>'] for h in hits]  # fmt: skip
        return ask + table(["session", "role", "when", "message"], rows, empty="No archived message matches.")
    pager = []
    if offset > 0:
        pager.append(f'<a rel="prev" href="{url("/sessions", offset=max(0, offset - 50))}">← newer</a>')
    if more:
        pager.append(f'<a rel="next" href="{url("/sessions", offset=offset + 50)}">older →</a>')
    body = table(
        ["session", "source", "started", "messages"], [_session_row(s) for s in listed], empty="No archived sessions."
    )
    return ask + body + f'<nav class="pager">{" ".join(pager)}</nav>'


def _snippet(snippet: str) -> str:
    """An archive snippet with its match marks (:data:`~mnemo.archive.search.HIGHLIGHT`) as ``<mark>``."""
    opening, closing = HIGHLIGHT
    pattern = re.compile(f"{re.escape(opening)}(.+?){re.escape(closing)}", re.S)
    parts, last = [], 0
    for found in pattern.finditer(snippet):
        parts += [esc(snippet[last : found.start()]), f"<mark>{esc(found[1])}</mark>"]
        last = found.end()
    return "".join(parts) + esc(snippet[last:])


def conversation(info: SessionInfo, messages: Sequence[StoredMessage], lineage: Sequence[SessionInfo],
                 before: int | None, after: int | None) -> str:  # fmt: skip
    """One session's messages in order, each addressable as ``#m<id>``, and the sessions of its lineage."""
    line = " → ".join(
        f'<strong>{esc(s.title or s.id)}</strong>' if s.id == info.id else f'<a href="{esc(session_path(s.id))}">{esc(s.title or s.id)}</a>'
        for s in lineage
    )  # fmt: skip
    turns = "".join(
        f'<article class="msg {esc(m.role)}" id="m{m.id}" tabindex="-1"><header>{esc(m.role)}{f" · {esc(m.tool_name)}" if m.tool_name else ""}'
        f' · {when(m.created_at)} · <a href="#m{m.id}">#{m.id}</a></header><div class="text">{esc(m.text)}</div></article>'
        for m in messages
    )  # fmt: skip
    pager = []
    if before is not None:
        pager.append(f'<a rel="prev" href="{url(session_path(info.id), before=before)}">← earlier messages</a>')
    if after is not None:
        pager.append(f'<a rel="next" href="{url(session_path(info.id), after=after)}">later messages →</a>')
    return (
        f'<p class="lede">{esc(info.source)} · started {when(info.started_at)} · {info.message_count:,} messages'
        f"{f' · model {esc(info.model)}' if info.model else ''}</p>"
        f'<p>Lineage: {line}</p><nav class="pager">{" ".join(pager)}</nav>{turns or "<p class=muted>No messages.</p>"}'
    )


# -- review --------------------------------------------------------------------------------------------


def prompt(blocks: Sequence[tuple[str, str]]) -> str:
    """The system prompt the next session would freeze, block by block."""
    if not blocks:
        return '<p class="muted">Empty: no curated memory and nothing for the bulletin.</p>'
    total = len("\n\n".join(text for _, text in blocks))
    sizes = table(
        ["block", "characters"],
        [[esc(name), f"{len(text):,}"] for name, text in blocks]
        + [["<strong>total</strong>", f"<strong>{total:,}</strong>"]],
    )
    parts = "".join(f'<h2>{esc(name)}</h2><pre class="prompt">{esc(text)}</pre>' for name, text in blocks)
    return (
        "<p>What a new session would put in the system prompt (maintenance due at its start may still change the bulletin).</p>"
        + sizes
        + parts
    )


def login(reason: str = "") -> str:
    """The form for a configured token (the start URL logs in by itself)."""
    note = f'<p class="error" role="alert">{esc(reason)}</p>' if reason else ""
    return (
        f"{note}<p>Open the link <code>mnemo ui</code> printed when it started, or enter an access token "
        "(<code>serve_token</code> / <code>[[serve.tokens]]</code> in the configuration).</p>"
        '<form method="post" action="/login" class="row"><label>Token <input type="password" name="token" autocomplete="off" required autofocus></label>'
        '<button type="submit">Log in</button></form>'
    )


def error(message: str) -> str:
    return f'<p class="error" role="alert">{esc(message)}</p><p><a href="/">Back to the overview</a></p>'
