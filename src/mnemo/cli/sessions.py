"""``mnemo sessions``: list, show, search, import and delete archived sessions."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .._time import iso
from ..archive import Archive
from ..archive.importer import ImportReport, import_jsonl
from ..archive.records import ROLES
from ..embeddings import named_embedder
from ..storage import open_archive
from ._output import CliError, lines, print_json, print_table, progress
from ._settings import settings_for


def _archive(args: argparse.Namespace) -> Archive:
    settings = settings_for(args)
    return open_archive(settings.database_target, embedder=named_embedder(settings.archive_embedder, cache_dir=settings.cache_directory), scope=settings.scope)


def _short(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(timestamp: float | None) -> str:
    return (iso(timestamp) or "").replace("T", " ")[:16]


def _list(args: argparse.Namespace) -> int:
    with _archive(args) as archive:
        sessions = archive.list_sessions(limit=args.limit, source=args.source, include_hidden=args.all)
    if args.json:
        print_json({"count": len(sessions), "sessions": [s.to_dict() for s in sessions]})
        return 0
    if not sessions:
        lines(["no sessions archived yet"])
        return 0
    rows = [
        {"id": s.id, "started": _when(s.started_at), "source": s.source, "messages": s.message_count,
         "title": _short(s.title or "", 40), "parent": s.parent_session_id}
        for s in sessions
    ]
    columns = ["id", "started", "source", "messages", "title"]
    if any(row["parent"] for row in rows):
        columns.append("parent")
    print_table(rows, columns, title="sessions")
    return 0


def _show(args: argparse.Namespace) -> int:
    with _archive(args) as archive:
        info = archive.get_session(args.id)
        if info is None:
            raise CliError(f"no session with id {args.id!r}")
        messages = archive.messages(args.id)
    if args.json:
        print_json({"session": info.to_dict(), "messages": [m.to_message() | {"id": m.id, "time": iso(m.created_at)} for m in messages]})
        return 0
    lines([f"session {info.id}  source={info.source}  started={iso(info.started_at)}  messages={info.message_count}"])
    if info.title:
        lines([f"title: {info.title}"])
    for message in messages:
        label = message.role + (f" ({message.tool_name})" if message.tool_name else "")
        body = message.text
        if message.tool_calls:
            calls = ", ".join(str(call.get("function", call).get("name")) for call in message.tool_calls if isinstance(call, dict))
            body = (body + "\n" if body else "") + f"[calls: {calls}]"
        lines([f"\n#{message.id} {label} · {iso(message.created_at)}", body])
    return 0


def _search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    with _archive(args) as archive:
        groups = archive.search(
            query, limit=args.limit, role=args.role, source=args.source, since=args.since, until=args.until,
            sort=args.sort, include_hidden=args.all, context=1 if args.json else 0,
        )
    if args.json:
        print_json({"query": query, "count": len(groups), "sessions": [g.to_dict() for g in groups]})
        return 0
    if not groups:
        lines([f"no messages match {query!r}"])
        return 0
    rows: list[dict[str, Any]] = []
    for group in groups:
        for hit in group.hits:
            rows.append({
                "session": group.root.id, "message": hit.message.id, "role": hit.message.role,
                "time": _when(hit.message.created_at), "snippet": _short(hit.snippet, 120),
            })
    print_table(rows, ["session", "message", "role", "time", "snippet"], title=f"search: {query}")
    return 0


def _import(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.files]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise CliError(f"no such file: {', '.join(missing)}")
    reports: dict[str, ImportReport] = {}
    with _archive(args) as archive:
        with progress(None, "importing messages") as advance:
            for path in paths:
                reports[str(path)] = import_jsonl(archive, path, source=args.source, progress=advance)
        pending = archive.pending_embeddings()
    created = [sid for report in reports.values() for sid in report.created]
    skipped = [sid for report in reports.values() for sid in report.skipped]
    if args.json:
        print_json({
            "imported_sessions": created,
            "skipped_sessions": skipped,
            "messages": sum(report.messages for report in reports.values()),
            "files": {path: asdict(report) for path, report in reports.items()},
            "pending_embeddings": pending,
        })  # fmt: skip
    else:
        already = f"; {len(skipped)} already archived, skipped" if skipped else ""
        lines([f"imported {len(created)} session(s) from {len(paths)} file(s){already}"])
        if pending:
            lines([f"{pending} messages wait for vectors: mnemo graph embed computes them now"])
    return 0


def _delete(args: argparse.Namespace) -> int:
    with _archive(args) as archive:
        if archive.get_session(args.id) is None:
            raise CliError(f"no session with id {args.id!r}")
        removed = archive.delete_session(args.id)
    if args.json:
        print_json({"deleted": args.id, "messages_removed": removed})
    else:
        lines([f"deleted session {args.id} ({removed} messages)"])
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo sessions ...``."""
    parser = subparsers.add_parser("sessions", parents=[common], help="the session archive: list, show, search, import, delete")
    commands = parser.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", parents=[common], help="recent sessions")
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--source", help="only sessions from this source")
    listing.add_argument("--all", action="store_true", help="include subagent and tool sessions")
    listing.set_defaults(handler=_list)

    show = commands.add_parser("show", parents=[common], help="every message of one session")
    show.add_argument("id")
    show.set_defaults(handler=_show)

    search = commands.add_parser("search", parents=[common], help="full-text search over every message")
    search.add_argument("query", nargs="+")
    search.add_argument("--role", choices=ROLES)
    search.add_argument("--source")
    search.add_argument("--since", help="ISO date/time")
    search.add_argument("--until", help="ISO date/time")
    search.add_argument("--sort", choices=["relevance", "newest", "oldest"], default="relevance")
    search.add_argument("--limit", type=int, default=5, help="sessions to show (default 5)")
    search.add_argument("--all", action="store_true", help="include subagent and tool sessions")
    search.set_defaults(handler=_search)

    importing = commands.add_parser("import", parents=[common], help="import JSONL conversation files")
    importing.add_argument("files", nargs="+")
    importing.add_argument("--source", default="import", help="source recorded on the new sessions")
    importing.set_defaults(handler=_import)

    delete = commands.add_parser("delete", parents=[common], help="forget a session and its messages")
    delete.add_argument("id")
    delete.set_defaults(handler=_delete)
