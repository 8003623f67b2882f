"""The page frame and small HTML pieces every view shares. Every text that comes from memory, a request or a
file goes through :func:`esc`; the pieces here return HTML strings built only from escaped parts."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import urlencode

from .. import __version__
from ..scope import Scope

NAV = (
    ("/", "Overview", "o"),
    ("/memories", "Memories", "m"),
    ("/recall", "Recall", "r"),
    ("/curated", "Curated", "c"),
    ("/sessions", "Sessions", "s"),
    ("/prompt", "Prompt", "p"),
    ("/review", "Review", "v"),
)


def esc(value: object) -> str:
    """``value`` as text safe inside an element or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def when(seconds: float | None) -> str:
    """A Unix time as ``YYYY-MM-DD HH:MM`` UTC in a ``<time>`` element ("never" for None)."""
    if seconds is None:
        return '<span class="muted">never</span>'
    moment = datetime.fromtimestamp(seconds, UTC)
    return f'<time datetime="{moment.isoformat()}">{moment:%Y-%m-%d %H:%M}</time>'


def url(path: str, **query: object) -> str:
    """``path`` with the non-empty ``query`` values, escaped for an attribute."""
    pairs = [(k, str(v)) for k, v in query.items() if v not in (None, "", 0, False)]
    return esc(f"{path}?{urlencode(pairs)}" if pairs else path)


def scope_label(scope: Scope) -> str:
    """A scope as the header and tables show it."""
    parts = [f"user {scope.user_id or '(default)'}"]
    if scope.agent_id:
        parts.append(f"agent {scope.agent_id}")
    if scope.channel_id:
        parts.append(f"channel {scope.channel_id}")
    return " · ".join(parts)


def form(action: str, csrf: str, body: str, *, label: str, kind: str = "", confirm: str = "") -> str:
    """A POST form to ``action`` carrying the session's CSRF token, ending in one submit button."""
    prompt = f' data-confirm="{esc(confirm)}"' if confirm else ""
    return (
        f'<form method="post" action="{esc(action)}" class="inline"{prompt}>'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">{body}'
        f'<button type="submit" class="{esc(kind)}">{esc(label)}</button></form>'
    )


def options(values: Iterable[str], selected: str | Sequence[str], *, blank: str | None = None) -> str:
    """``<option>`` elements for ``values``, ``selected`` marked; a leading empty one labelled ``blank``."""
    chosen = {selected} if isinstance(selected, str) else set(selected)
    head = f'<option value="">{esc(blank)}</option>' if blank is not None else ""
    return head + "".join(
        f'<option value="{esc(v)}"{" selected" if v in chosen else ""}>{esc(v)}</option>' for v in values
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str = "Nothing here.", cls: str = "") -> str:
    """A table of already-rendered cells, or a line saying ``empty``."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted">{esc(empty)}</p>'
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    return f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def bar(used: int, limit: int) -> str:
    """A usage bar: ``used`` of ``limit`` characters."""
    share = 0 if limit <= 0 else min(100, round(100 * used / limit))
    level = "high" if share >= 90 else ("mid" if share >= 70 else "low")
    return (
        f'<div class="usage {level}" role="meter" aria-valuemin="0" aria-valuemax="{limit}" aria-valuenow="{used}"'
        f' aria-label="{used:,} of {limit:,} characters"><span style="width:{share}%"></span></div>'
        f'<p class="muted small">{used:,} of {limit:,} characters ({share}%)</p>'
    )


def chip(text: str, kind: str = "") -> str:
    """A small label (a type, a status)."""
    return f'<span class="chip {esc(kind)}">{esc(text)}</span>'


def page(title: str, body: str, *, active: str = "", user: str | None = None, scope: Scope | None = None,
         csrf: str = "", flash: Sequence[str] = ()) -> str:  # fmt: skip
    """The whole document: header with navigation, the scope in view, theme switch, logout; then ``body``."""
    nav = "".join(
        f'<a href="{path}" data-key="{key}"{" aria-current=page" if path == active else ""}>{esc(name)}</a>'
        for path, name, key in NAV
    ) if user is not None else ""  # fmt: skip
    who = ""
    if user is not None and scope is not None:
        logout = form("/logout", csrf, "", label="Log out", kind="link")
        who = f'<a class="scope" href="/scope" title="change the scope in view">{esc(scope_label(scope))}</a>{logout}'
    notes = "".join(f'<p class="flash" role="status">{esc(note)}</p>' for note in flash)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · mnemo</title>"
        '<link rel="stylesheet" href="/static/app.css"><script src="/static/app.js" defer></script></head>'
        '<body><a class="skip" href="#main">Skip to content</a>'
        f'<header><span class="brand">mnemo</span><nav aria-label="pages">{nav}</nav>'
        f'<div class="who">{who}<button type="button" id="theme" class="link" title="light / dark / system">Theme</button></div></header>'
        f'<main id="main" tabindex="-1"><h1>{esc(title)}</h1>{notes}{body}</main>'
        f'<footer class="muted small">mnemo {esc(__version__)} · local only · keys: / search, g then {" ".join(key for _, _, key in NAV)}</footer>'
        "</body></html>"
    )
