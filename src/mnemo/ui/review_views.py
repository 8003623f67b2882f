"""The review queue's pages as HTML: held writes with where they came from, why they wait, and the decisions
taken on them. Like :mod:`.views`, nothing here reads or writes memory."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from ..graph.review import ReviewItem, ReviewState, WriteKind
from .layout import chip, esc, form, table, when
from .views import excerpt, session_path


def _review_path(item: ReviewItem) -> str:
    return f"/review/{quote(item.id, safe='')}"


def _origin(item: ReviewItem) -> str:
    """Where a held write came from: its origin, the tool or source, the session and turn."""
    held = item.provenance
    parts = [chip(held.origin.value, "warning" if held.untrusted else "")]
    if held.source:
        parts.append(f"after <code>{esc(held.source)}</code>")
    if held.session_id:
        turn = f", turn {held.turn}" if held.turn else ""
        parts.append(f'in <a href="{esc(session_path(held.session_id))}">{esc(held.session_id)}</a>{esc(turn)}')
    if held.via:
        parts.append(f'<span class="muted">via {esc(held.via)}</span>')
    return " ".join(parts)


def _findings(item: ReviewItem) -> str:
    return (
        " ".join(chip(f"{f.get('category')} / {f.get('rule')}", "finding") for f in item.findings)
        or '<span class="muted">none</span>'
    )


def _decision(item: ReviewItem, csrf: str) -> str:
    """Approve (naming the digest of the content shown) and Reject, for a pending item."""
    if item.state is not ReviewState.PENDING:
        return ""
    path = _review_path(item)
    digest = f'<input type="hidden" name="digest" value="{esc(item.digest)}">'
    return (
        f'<div class="row">{form(f"{path}/approve", csrf, digest, label="Approve")}'
        f"{form(f'{path}/reject', csrf, '', label='Reject', kind='danger')}</div>"
    )


def _follows(item: ReviewItem) -> str:
    """The start of the untrusted content the write came after (the item's page shows all of it)."""
    if not item.provenance.excerpt:
        return ""
    return f'<p class="small muted">It came after: “{esc(excerpt(item.provenance.excerpt))}”</p>'


def _held(item: ReviewItem, csrf: str) -> str:
    what = "memory" if item.kind is WriteKind.GRAPH else f"{str(item.payload.get('target', '')).upper()}.md"
    texts = "".join(f'<blockquote class="content">{esc(text)}</blockquote>' for text in item.texts)
    return (
        f'<section class="card held" id="{esc(item.id)}"><p class="small">{chip(what, "type")} '
        f'{_origin(item)} · queued {when(item.created_at)} · <a href="{esc(_review_path(item))}">details</a></p>'
        f"{texts or f'<p>{esc(item.summary)}</p>'}"
        f"{_follows(item)}"
        f'<p class="small">Scan: {_findings(item)}</p>{_decision(item, csrf)}</section>'
    )


def _went(item: ReviewItem) -> str:
    """An approved write's outcome, linked to where it now is (the memory, or the curated file)."""
    if item.state is not ReviewState.APPROVED:
        return esc(item.outcome)
    if item.kind is WriteKind.GRAPH:
        memory_id = item.outcome.removeprefix("memory ")  # mnemo.review.approve records "memory <id>"
        return f'<a href="/memories/{esc(quote(memory_id, safe=""))}">{esc(item.outcome)}</a>'
    target = str(item.payload.get("target", ""))
    return f'<a href="/curated#{esc(quote(target, safe=""))}">{esc(target.upper())}.md</a>: {esc(item.outcome)}'


def review_queue(pending: Sequence[ReviewItem], decided: Sequence[ReviewItem], csrf: str) -> str:
    """The writes held for review in the scope in view, newest first, each with Approve and Reject; then the
    latest decisions."""
    intro = (
        "<p>What the agent wrote after reading untrusted content (or what the scan flagged) waits here, in no "
        "prompt or recall, until you approve it; approving applies exactly what is shown, as yours.</p>"
    )
    held = "".join(_held(item, csrf) for item in pending) or '<p class="muted">No write awaits your review.</p>'
    rows = [
        [f'<a href="{esc(_review_path(i))}">{esc(excerpt(i.summary, 100))}</a>', chip(i.state.value),
         when(i.decided_at), _went(i)]
        for i in decided
    ]  # fmt: skip
    return intro + held + "<h2>Decided</h2>" + table(["write", "decision", "when", "outcome"], rows, empty="None yet.")


def review_item(item: ReviewItem, csrf: str) -> str:
    """One held write: what it would do, where it came from, the untrusted content it follows, the scan's
    findings, its digest; Approve and Reject while it is pending."""
    held = item.provenance
    facts = table(["", ""], [
        ["state", chip(item.state.value)],
        ["would do", esc(item.summary)],
        ["origin", _origin(item)],
        ["queued", when(item.created_at)],
        ["expires", when(item.expires_at)],
        ["scan", _findings(item)],
        ["digest", f"<code>{esc(item.digest)}</code>"],
        *([["decided", f"{when(item.decided_at)} {esc(item.outcome)}"]] if item.decided_at is not None else []),
    ], cls="facts")  # fmt: skip
    texts = "".join(f'<blockquote class="content">{esc(text)}</blockquote>' for text in item.texts)
    source = (
        f'<h2>The untrusted content it follows</h2><pre class="prompt untrusted">{esc(held.excerpt)}</pre>'
        if held.excerpt
        else ""
    )
    return f"{texts}{_decision(item, csrf)}{facts}{source}" + '<p><a href="/review">← the review queue</a></p>'


# -- prompt, login, errors -----------------------------------------------------------------------------
