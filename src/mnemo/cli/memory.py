"""``mnemo memory``: show and edit the curated memory (``MEMORY.md`` / ``USER.md``) from a shell."""

from __future__ import annotations

import argparse
from typing import Any

from ..curated.entries import entry_id, joined_length
from ..curated.ops import Add, MemoryOp, MemoryOpOutcome, Remove, Replace, usage_text
from ..curated.store import TARGETS, MemoryStore
from ..storage import open_curated
from ._output import CliError, lines, print_json, print_table
from ._settings import settings_for

_CLI = {"via": "cli"}


def _store(args: argparse.Namespace) -> MemoryStore:
    store = open_curated(settings_for(args))
    store.load()
    return store


def _show(args: argparse.Namespace) -> int:
    store = _store(args)
    targets = [args.target] if args.target else list(TARGETS)
    report: dict[str, Any] = {}
    for target in targets:
        entries = store.entries(target)
        failure = store.read_failure(target)
        report[target] = {
            "path": str(store.path(target)),
            "usage": usage_text(joined_length(entries), store.char_limit(target)),
            "entries": list(entries),
            "ids": [entry_id(e) for e in entries],
            "read_error": str(failure) if failure else None,
        }
    if args.json:
        print_json(report)
        return 0
    for target, shown in report.items():
        lines([f"{target} ({shown['path']}) [{shown['usage']}], {len(shown['entries'])} entries"])
        if shown["read_error"]:
            lines([f"  unreadable: {shown['read_error']}"])
        for number, entry in enumerate(shown["entries"], 1):
            first, *rest = entry.splitlines()
            lines([f"  {number}. [{entry_id(entry)}] {first}", *(f"     {line}" for line in rest)])
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    store = _store(args)
    blocks = {target: store.render_snapshot(target) for target in ([args.target] if args.target else TARGETS)}
    if args.json:
        print_json(blocks)
    else:
        lines("\n\n".join(block for block in blocks.values() if block is not None).splitlines())
    return 0


def _edit(args: argparse.Namespace, op: MemoryOp | None) -> int:
    store = _store(args)
    if op is None:
        outcome: MemoryOpOutcome = store.restore(args.record, whole=args.whole, origin=_CLI)
    else:
        outcome = store.apply(args.target, op, origin=_CLI)
    if args.json:
        print_json(
            {
                "success": True,
                "target": outcome.target,
                "usage": outcome.usage,
                "entry_count": outcome.entry_count,
                "message": outcome.message,
            }
        )
    else:
        lines([f"{outcome.message} {outcome.target}: {outcome.entry_count} entries [{outcome.usage}]"])
    return 0


def _history(args: argparse.Namespace) -> int:
    store = open_curated(settings_for(args))
    if args.target is not None and args.target not in TARGETS:
        raise CliError(f"--target must be 'memory' or 'user', got {args.target!r}")
    records = [r.as_dict() for r in store.history.records(args.target)]
    if args.json:
        print_json({"records": records})
        return 0
    rows = [
        {**r, "removed": " | ".join(r["removed"]), "added": " | ".join(r["added"]), "via": r["origin"].get("via", "")}
        for r in records
    ]
    print_table(rows, ["id", "time", "target", "operation", "removed", "added", "via"], title="curated history")
    return 0


def _old_text(args: argparse.Namespace) -> str:
    if args.id is None and args.old_text is None:
        raise CliError("give OLD (a substring of one entry) or --id")
    return args.old_text or ""


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo memory`` and its subcommands."""
    group = subparsers.add_parser("memory", parents=[common], help="show and edit the curated memory")
    actions = group.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    # Targets are checked by the store, not argparse, so a bad one gets mnemo's one-line reason.
    target_help = "memory (your agent's notes, default) or user (the user profile)"

    show = actions.add_parser("show", parents=[common], help="list the live entries and usage")
    show.add_argument("--target", help="only this store: memory or user")
    show.set_defaults(handler=_show)

    snapshot = actions.add_parser("snapshot", parents=[common], help="print the system-prompt blocks")
    snapshot.add_argument("--target", help="only this store's block: memory or user")
    snapshot.set_defaults(handler=_snapshot)

    add = actions.add_parser("add", parents=[common], help="add an entry")
    add.add_argument("--target", default="memory", help=target_help)
    add.add_argument("content", help="the entry text")
    add.set_defaults(handler=lambda args: _edit(args, Add(args.content)))

    replace = actions.add_parser("replace", parents=[common], help="replace the entry containing OLD (or --id)")
    replace.add_argument("--target", default="memory", help=target_help)
    replace.add_argument("--id", help="the entry's id (from `show`); used before OLD")
    replace.add_argument("old_text", metavar="OLD", nargs="?", help="a substring of exactly one entry")
    replace.add_argument("content", metavar="NEW", help="the new entry text")
    replace.set_defaults(handler=lambda args: _edit(args, Replace(_old_text(args), args.content, entry_id=args.id)))

    remove = actions.add_parser("remove", parents=[common], help="remove the entry containing OLD (or --id)")
    remove.add_argument("--target", default="memory", help=target_help)
    remove.add_argument("--id", help="the entry's id (from `show`); used before OLD")
    remove.add_argument("old_text", metavar="OLD", nargs="?", help="a substring of exactly one entry")
    remove.set_defaults(handler=lambda args: _edit(args, Remove(_old_text(args), entry_id=args.id)))

    history = actions.add_parser("history", parents=[common], help="list every curated write, with ids to restore")
    history.add_argument("--target", help="only this store: memory or user")
    history.set_defaults(handler=_history)

    restore = actions.add_parser(
        "restore", parents=[common], help="add back what history record ID removed (a new write: limit and scan apply)"
    )
    restore.add_argument("record", metavar="ID", help="a history record id (from `history`)")
    restore.add_argument("--whole", action="store_true", help="set the store back to its entries before that write")
    restore.set_defaults(handler=lambda args: _edit(args, None))
