"""``mnemo review``: the writes held for the user's review (see :mod:`mnemo.review`): list, show, approve,
reject."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..graph.review import ReviewItem, ReviewQueue, ReviewState
from ..review import approve
from ..storage import open_curated, open_graph
from ._output import CliError, lines, print_json, print_table
from ._settings import settings_for


@contextmanager
def _queue(args: argparse.Namespace) -> Iterator[ReviewQueue]:
    settings = settings_for(args)
    with open_graph(settings.database_target, scope=settings.scope, scan_threshold=settings.scan_threshold) as graph:
        yield ReviewQueue(graph, expire_days=settings.review_expire_days)


def _print_item(item: ReviewItem) -> None:
    shown = item.as_dict()
    provenance = shown["provenance"]
    where = ", ".join(f"{key} {provenance[key]}" for key in ("via", "source", "session_id", "turn") if key in provenance)
    lines(
        [
            f"{item.id} [{item.state.value}] {item.kind.value} write, queued {shown['created']}"
            + (f", expires {shown['expires']}" if shown["expires"] else ""),
            f"  origin: {provenance['origin']}" + (f" ({where})" if where else ""),
            *(f"  content: {text}" for text in item.texts),
            f"  would do: {item.summary}",
        ]
    )
    if "excerpt" in provenance:
        lines([f"  untrusted content it follows: {provenance['excerpt']}"])
    for finding in item.findings:
        lines([f"  scan: {finding.get('category')} / {finding.get('rule')} ({finding.get('layer')})"])
    lines([f"  digest: {item.digest}"])
    if item.outcome:
        lines([f"  outcome: {item.outcome}"])


def _list(args: argparse.Namespace) -> int:
    state = None if args.state == "all" else args.state
    with _queue(args) as queue:
        items = queue.items(state, query=args.query, limit=args.limit)
    if args.json:
        print_json({"items": [item.as_dict() for item in items]})
        return 0
    rows = [
        {"id": i.id, "state": i.state.value, "origin": i.provenance.origin.value, "source": i.provenance.source,
         "what": i.summary}
        for i in items
    ]  # fmt: skip
    print_table(rows, ["id", "state", "origin", "source", "what"], title="writes held for review")
    return 0


def _show(args: argparse.Namespace) -> int:
    with _queue(args) as queue:
        item = queue.get(args.id)
    if args.json:
        print_json(item.as_dict())
    else:
        _print_item(item)
    return 0


def _decide(args: argparse.Namespace, approving: bool) -> int:
    with _queue(args) as queue:
        if approving:
            store = open_curated(settings_for(args))
            try:
                item = approve(queue, args.id, store=store, digest=args.digest)
            finally:
                store.close()
        else:
            item = queue.reject(args.id)
    if args.json:
        print_json({"success": True, **item.as_dict()})
    else:
        lines([f"{item.id} {item.state.value}" + (f": {item.outcome}" if item.outcome else "")])
    return 0


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CliError(f"--limit must be a positive integer, got {text!r}") from None
    if value < 1:
        raise CliError(f"--limit must be a positive integer, got {text!r}")
    return value


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo review`` and its subcommands."""
    group = subparsers.add_parser("review", parents=[common], help="writes held for your review: list, approve, reject")
    actions = group.add_subparsers(dest="review_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", parents=[common], help="the held writes, newest first")
    listing.add_argument(
        "--state", default="pending", choices=[*(s.value for s in ReviewState), "all"], help="default: pending"
    )
    listing.add_argument("--query", help="only writes whose content contains this text")
    listing.add_argument("--limit", type=_limit, default=100, help="at most this many (default 100)")
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", parents=[common], help="one held write: content, origin, scan findings, digest")
    show.add_argument("id", metavar="ID")
    show.set_defaults(handler=_show)

    approving = actions.add_parser("approve", parents=[common], help="apply a held write as your own")
    approving.add_argument("id", metavar="ID")
    approving.add_argument("--digest", help="the digest `show` printed: approve only that exact content")
    approving.set_defaults(handler=lambda args: _decide(args, True))

    rejecting = actions.add_parser("reject", parents=[common], help="never apply a held write (it is kept as rejected)")
    rejecting.add_argument("id", metavar="ID")
    rejecting.set_defaults(handler=lambda args: _decide(args, False))
