"""``mnemo graph``: add, recall, relate, forget, show, export, import, count, embed, pin, maintain and extract
memories from a shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._files import atomic_write
from .._time import iso
from ..embeddings import named_embedder
from ..errors import InvalidArgument
from ..graph.backfill import archived_sessions, backfill, pending_messages
from ..graph.bulletin import synthesize_with
from ..graph.maintenance import maintenance_log
from ..graph.review import ReviewQueue
from ..graph.store import MemoryGraph
from ..graph.transfer import export_data, export_json, export_markdown, import_json
from ..graph.types import MemoryType, Relation
from ..providers.graph import bulletin_model
from ..storage import open_archive, open_graph
from ._output import CliError, lines, print_json, print_table, progress
from ._settings import settings_for


def _graph(args: argparse.Namespace) -> MemoryGraph:
    settings = settings_for(args)
    return open_graph(
        settings.database_target,
        scope=settings.scope,
        embedder=named_embedder(settings.graph_embedder, cache_dir=settings.cache_directory),
        scan_threshold=settings.scan_threshold,
    )


def _parse_link(text: str) -> tuple[str, str, float]:
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise InvalidArgument("--relate", f"expected ID:RELATION[:WEIGHT], got {text!r}")
    try:
        weight = float(parts[2]) if len(parts) == 3 else 1.0
    except ValueError:
        raise InvalidArgument("--relate", f"weight must be a number, got {parts[2]!r}") from None
    return parts[0], parts[1], weight


def _add(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        if args.replaces:
            memory = graph.replace(
                args.replaces, args.content, memory_type=args.type, importance=args.importance, subject=args.subject
            )
        else:
            links = [_parse_link(link) for link in args.relate]
            memory = graph.remember(
                args.content, args.type or MemoryType.FACT, importance=args.importance, source=args.source,
                subject=args.subject or "", relations=links,
            )  # fmt: skip
        if args.json:
            print_json({"success": True, "memory": memory.as_dict(), "associations": [a.as_dict() for a in graph.associations(memory.id)]})
        else:
            about = f", about {memory.subject}" if memory.subject else ""
            lines([f"saved {memory.id} ({memory.type.value}, importance {memory.importance:g}{about})"])
    return 0


def _with_subject(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """``columns`` with a subject column before the content, only when some row has a subject: most
    memories have none, and an empty column costs width the content needs."""
    if not any(row["subject"] for row in rows):
        return columns
    return [*columns[:-1], "subject", columns[-1]]


def _recall(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        results = graph.recall(
            args.query, limit=args.limit, types=args.type or None, since=args.since, until=args.until,
            include_superseded=args.history, include_forgotten=args.forgotten,
        )  # fmt: skip
    if args.json:
        print_json({"success": True, "count": len(results), "results": [r.as_dict() for r in results]})
        return 0
    rows = [
        {
            "id": r.memory.id,
            "type": r.memory.type.value,
            "date": (iso(r.memory.created_at) or "")[:10],
            "score": f"{r.score:.3f}",
            "found by": "+".join(sorted(r.channels)),
            "subject": r.memory.subject,
            "content": r.memory.content,
        }
        for r in results
    ]
    if rows:
        print_table(rows, _with_subject(rows, ["id", "type", "date", "score", "found by", "content"]))
    else:
        lines(["no matching memories"])
    return 0


def _relate(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        edge = graph.relate(args.source, args.target, args.relation, args.weight)
    if args.json:
        print_json({"success": True, "association": edge.as_dict()})
    else:
        lines([f"{edge.source_id} {edge.relation.value} {edge.target_id} (weight {edge.weight:g})"])
    return 0


def _forget(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        if args.purge:
            count = graph.purge(args.ids)
            message = f"purged {count} memories for good"
        else:
            for memory_id in args.ids:
                graph.get(memory_id)  # all ids must exist before any is forgotten
            for memory_id in args.ids:
                graph.forget(memory_id)
            count = len(args.ids)
            message = f"forgot {count} memories (kept in history)"
    if args.json:
        print_json({"success": True, "count": count, "purged": args.purge, "message": message})
    else:
        lines([message])
    return 0


def _show(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        if args.id:
            memory = graph.get(args.id)
            edges = graph.associations(memory.id)
            chain = graph.history(memory.id)
            payload: dict[str, Any] = {
                "memory": memory.as_dict(),
                "associations": [e.as_dict() for e in edges],
                "history": [m.as_dict() for m in chain],
                "maintenance": maintenance_log(graph, memory.id),
            }
            if args.json:
                print_json(payload)
                return 0
            for key, value in payload["memory"].items():
                lines([f"{key:>14}: {value}"])
            if edges:
                lines(["", "associations:"] + [f"  {e.source_id} {e.relation.value} {e.target_id} ({e.weight:g})" for e in edges])
            if len(chain) > 1:
                lines(["", "versions (newest first):"] + [f"  {m.id}  {(iso(m.created_at) or '')[:10]}  {m.content}" for m in chain])
            if payload["maintenance"]:
                lines(["", "maintenance:"] + [f"  {e['at']}  {e['action']} {e['other'] or ''}  {e['detail']}" for e in payload["maintenance"]])
            return 0
        memories = graph.memories(types=args.type or None, include_forgotten=args.all, include_superseded=args.all)
    if args.json:
        print_json({"count": len(memories), "memories": [m.as_dict() for m in memories]})
        return 0
    rows = [
        {
            "id": m.id,
            "type": m.type.value,
            "importance": f"{m.importance:g}",
            "created": (iso(m.created_at) or "")[:10],
            "state": "forgotten" if m.forgotten else ("superseded" if m.superseded else ""),
            "subject": m.subject,
            "content": m.content,
        }
        for m in memories
    ]
    if rows:
        print_table(rows, _with_subject(rows, ["id", "type", "importance", "created", "state", "content"]))
    else:
        lines(["no memories"])
    return 0


def _pin(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        for memory_id in args.ids:
            graph.get(memory_id)  # all ids must exist before any changes
        memories = [graph.pin(memory_id, args.pinned) for memory_id in args.ids]
    verb = "pinned" if args.pinned else "unpinned"
    if args.json:
        print_json({"success": True, "pinned": args.pinned, "memories": [m.as_dict() for m in memories]})
    else:
        lines([f"{verb} {m.id}" for m in memories])
    return 0


def _unforget(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        for memory_id in args.ids:
            graph.get(memory_id)
        memories = [graph.unforget(memory_id) for memory_id in args.ids]
    if args.json:
        print_json({"success": True, "memories": [m.as_dict() for m in memories]})
    else:
        lines([f"recalled again: {m.id} (importance {m.importance:g})" for m in memories])
    return 0


def _maintain(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    with _graph(args) as graph:
        report = graph.maintain(
            dry_run=args.dry_run, prune_below=settings.prune_below, prune_after_days=settings.prune_after_days
        )
        synthesized = (
            settings.bulletin_llm and not args.dry_run and report.complete and report.skipped is None
            and synthesize_with(graph, lambda: bulletin_model(settings), settings.bulletin_chars)
        )  # fmt: skip
    if args.json:
        print_json({"success": report.skipped is None, **report.as_dict(), "bulletin_synthesized": bool(synthesized)})
        return 0 if report.skipped is None else 1
    if report.skipped is not None:
        raise CliError(f"maintenance skipped: {report.skipped} (another process is running a pass)")
    rows = [{"": key, "count": getattr(report, key)} for key in ("decayed", "boosted", "pruned", "linked", "merged", "contradictions")]
    title = "maintenance (dry run)" if report.dry_run else "maintenance"
    print_table(rows, ["", "count"], title=f"{title}, {report.seconds:.2f} s")
    return 0


def _extract(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    if args.llm:
        # Imported here: only --llm needs the OpenAI client.
        from ..graph.extract_llm import LLMExtractor
        from ..llm.openai_compatible import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM.from_settings(settings)  # LLMNotConfigured names what is missing
        extractor: Any = LLMExtractor(llm, deadline=settings.llm_timeout * 3)
    else:
        llm, extractor = None, None
    try:
        with _graph(args) as graph, open_archive(settings.database_target, scope=settings.scope) as archive:
            if args.session:
                missing = [s for s in args.session if archive.get_session(s) is None]
                if missing:
                    raise CliError(f"no archived session {missing[0]!r} in this scope", session=missing[0])
                sessions = list(dict.fromkeys(args.session))
            else:
                sessions = list(archived_sessions(archive))
            options = {"extractor": extractor} if extractor is not None else {}
            with progress(pending_messages(graph, archive, sessions), "extracting memories") as advance:
                review = ReviewQueue(graph, expire_days=settings.review_expire_days) if settings.quarantine else None
                report = backfill(graph, archive, sessions, advance=advance, review=review, **options)
    finally:
        if llm is not None:
            llm.close()
    summary = {"sessions": len(sessions), **report.as_dict()}
    if extractor is not None:
        summary["llm_failures"], summary["llm_fallbacks"] = extractor.failures, extractor.fallbacks
    if args.json:
        print_json(summary)
        return 0
    print_table([{"": key, "count": value} for key, value in summary.items()], ["", "count"], title="extraction")
    return 0


def _export(args: argparse.Namespace) -> int:
    # Without --format: JSON for a .json file, or for --json alone (with --output, --json only makes the
    # report JSON); Markdown otherwise.
    wants_json = str(args.output).endswith(".json") if args.output else args.json
    fmt = args.format or ("json" if wants_json else "markdown")
    with _graph(args) as graph:
        if args.json and not args.output and fmt == "json":
            # The export document itself, so it pipes into `graph import -` (which ignores "success").
            print_json(export_data(graph, all_scopes=args.all_scopes))
            return 0
        text = (export_json if fmt == "json" else export_markdown)(graph, all_scopes=args.all_scopes)
    if args.output:
        try:
            atomic_write(Path(args.output), text.encode("utf-8"))
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
        if args.json:
            print_json({"output": args.output, "format": fmt})
        else:
            lines([f"wrote the graph as {fmt} to {args.output}"])
    elif args.json:
        print_json({"format": fmt, "markdown": text})
    else:
        sys.stdout.write(text)
    return 0


def _import(args: argparse.Namespace) -> int:
    try:
        raw = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror}") from exc
    with _graph(args) as graph:
        counts = import_json(graph, raw)
        # Records keep their own scopes, so what waits for vectors is counted over every scope.
        pending = _pending_vectors([graph.with_scope(scope) for scope in graph.scopes()])
    if args.json:
        print_json({"added": counts.memories_added, "updated": counts.memories_updated, "associations": counts.associations,
                    "pending_embeddings": pending})  # fmt: skip
    else:
        lines([f"imported: {counts.memories_added} new, {counts.memories_updated} updated, {counts.associations} associations"])
        if pending:
            lines([f"{pending} memories wait for vectors: mnemo graph embed --all-scopes computes them now"])
    return 0


def _stats(args: argparse.Namespace) -> int:
    with _graph(args) as graph:
        stats = graph.stats()
    if args.json:
        print_json(stats)
        return 0
    lines([f"memories: {stats['memories']} ({stats['active']} active, {stats['superseded']} superseded, {stats['forgotten']} forgotten)"])
    lines([f"  {kind}: {count}" for kind, count in stats["by_type"].items()])
    lines([f"associations: {stats['associations']}"])
    lines([f"  {relation}: {count}" for relation, count in stats["by_relation"].items()])
    if stats["embedder"] is not None:
        lines([f"vectors: {stats['embedded']} ({stats['embedder']['name']}), {stats['pending_embeddings']} pending"])
    return 0


# Memories or messages embedded between two progress updates (each batch inside is written at once, so
# an interrupted run keeps its work and the next one goes on from there).
_EMBED_STEP = 256


def _pending_vectors(views: list[MemoryGraph]) -> int | None:
    """Memories of these scopes still without a vector; ``None`` without an embedder."""
    if not views or views[0].embedder is None:
        return None
    return sum(view.stats()["pending_embeddings"] for view in views)


def _embed_graph(args: argparse.Namespace) -> dict[str, Any]:
    with _graph(args) as graph:
        views = [graph.with_scope(scope) for scope in graph.scopes()] if args.all_scopes else [graph]
        if graph.embedder is None:
            return {"embedder": None, "scopes": len(views), "embedded": 0, "pending": None}
        done = 0
        with progress(_pending_vectors(views), "embedding memories") as advance:
            for view in views:
                while count := view.embed_pending(_EMBED_STEP):
                    done += count
                    advance(count)
        return {"embedder": graph.embedder.name, "scopes": len(views), "embedded": done, "pending": _pending_vectors(views)}


def _embed_archive(args: argparse.Namespace) -> dict[str, Any]:
    settings = settings_for(args)
    embedder = named_embedder(settings.archive_embedder, cache_dir=settings.cache_directory)
    if embedder is None:
        return {"embedder": None, "embedded": 0, "pending": None}
    with open_archive(settings.database_target, embedder=embedder) as archive:
        done = 0
        with progress(archive.pending_embeddings(), "embedding archived messages") as advance:
            while count := archive.embed_pending(_EMBED_STEP):
                done += count
                advance(count)
        return {"embedder": embedder.name, "embedded": done, "pending": archive.pending_embeddings()}


def _embed(args: argparse.Namespace) -> int:
    report = {"graph": _embed_graph(args), "archive": _embed_archive(args)}
    if args.json:
        print_json(report)
        return 0
    for tier, done in report.items():
        if done["embedder"] is None:
            lines([f"{tier}: no embedder configured ({tier}_embedder = none)"])
        else:
            lines([f"{tier}: embedded {done['embedded']} ({done['embedder']}), {done['pending']} pending"])
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo graph`` and its subcommands."""
    parents = [common]
    group = subparsers.add_parser("graph", parents=parents, help="the memory graph: typed, connected memories")
    actions = group.add_subparsers(dest="graph_command", metavar="ACTION", required=True)
    types, relations = ", ".join(t.value for t in MemoryType), ", ".join(r.value for r in Relation)

    # Types and relations are checked by the graph, not argparse, so errors read like the tools' errors.
    add = actions.add_parser("add", parents=parents, help="remember a new memory")
    add.add_argument("content")
    add.add_argument("--type", help=f"one of {types} (default fact)")
    add.add_argument("--importance", type=float, help="0..1 (default: by type)")
    add.add_argument("--source", default="cli", help="where it came from (default cli)")
    add.add_argument("--subject", metavar="NAME", help="who it is about, e.g. user or a name (with --replaces: default the old one's)")
    add.add_argument("--relate", action="append", default=[], metavar="ID:RELATION[:WEIGHT]", help=f"edge to an existing memory ({relations})")
    add.add_argument("--replaces", metavar="ID", help="supersede this memory (adds an updates edge)")
    add.set_defaults(handler=_add)

    recall = actions.add_parser("recall", parents=parents, help="find the memories relevant to a query")
    recall.add_argument("query")
    recall.add_argument("--type", action="append", help="only this type (repeatable)")
    recall.add_argument("--since", help="created at or after (ISO date)")
    recall.add_argument("--until", help="created at or before (ISO date)")
    recall.add_argument("--limit", type=int, default=10)
    recall.add_argument("--history", action="store_true", help="include superseded versions")
    recall.add_argument("--forgotten", action="store_true", help="include forgotten memories")
    recall.set_defaults(handler=_recall)

    relate = actions.add_parser("relate", parents=parents, help="add or re-weight an edge SOURCE --RELATION--> TARGET")
    relate.add_argument("source")
    relate.add_argument("target")
    relate.add_argument("relation", help=relations)
    relate.add_argument("--weight", type=float, default=1.0)
    relate.set_defaults(handler=_relate)

    forget = actions.add_parser("forget", parents=parents, help="stop recalling memories (kept in history)")
    forget.add_argument("ids", nargs="+", metavar="ID")
    forget.add_argument("--purge", action="store_true", help="really delete them, with edges, vectors and index entries")
    forget.set_defaults(handler=_forget)

    show = actions.add_parser("show", parents=parents, help="list memories, or show one with its edges and versions")
    show.add_argument("id", nargs="?")
    show.add_argument("--type", action="append", help="only this type (repeatable)")
    show.add_argument("--all", action="store_true", help="include forgotten and superseded memories")
    show.set_defaults(handler=_show)

    for name, pinned, text in (("pin", True, "pin memories: they never fade or prune, and always make the bulletin"),
                               ("unpin", False, "unpin memories")):  # fmt: skip
        pin = actions.add_parser(name, parents=parents, help=text)
        pin.add_argument("ids", nargs="+", metavar="ID")
        pin.set_defaults(handler=_pin, pinned=pinned)

    unforget = actions.add_parser("unforget", parents=parents, help="recall forgotten or pruned memories again")
    unforget.add_argument("ids", nargs="+", metavar="ID")
    unforget.set_defaults(handler=_unforget)

    maintain = actions.add_parser("maintain", parents=parents, help="run a maintenance pass now: decay, prune, link, merge")
    maintain.add_argument("--dry-run", action="store_true", help="report what a pass would do; change nothing")
    maintain.set_defaults(handler=_maintain)

    extract = actions.add_parser(
        "extract", parents=parents, help="turn archived sessions into typed memories (resumable)",
        description="Run extraction over archived messages that were never extracted (sessions from before "
        "extraction existed, or imported): the deterministic extractor, or the configured model with --llm. "
        "Each batch is saved as it is done and a message is never extracted twice, so an interrupted run "
        "loses nothing and the next one goes on.",
    )  # fmt: skip
    which = extract.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", action="append", metavar="ID", help="this session (repeatable)")
    which.add_argument("--all", action="store_true", help="every archived session of this scope")
    extract.add_argument("--llm", action="store_true", help="extract with the configured model (falls back to the rules)")
    extract.set_defaults(handler=_extract)

    export = actions.add_parser("export", parents=parents, help="write the graph as Markdown or JSON")
    export.add_argument("--format", choices=("markdown", "json"), help="default: json for a .json file or with --json alone, else markdown")
    export.add_argument("--output", "-o", help="file to write (default: stdout)")
    export.add_argument("--all-scopes", action="store_true", help="every user/agent/channel, not just this scope")
    export.set_defaults(handler=_export)

    imp = actions.add_parser("import", parents=parents, help="restore a JSON export (idempotent; records keep their own scopes)")
    imp.add_argument("file", help="a JSON export, or - for stdin")
    imp.set_defaults(handler=_import)

    stats = actions.add_parser("stats", parents=parents, help="counts: active, superseded and forgotten memories, edges, vectors")
    stats.set_defaults(handler=_stats)

    embed = actions.add_parser(
        "embed", parents=parents, help="embed every memory (and archived message) still waiting for a vector",
        description="Compute the vectors recall would otherwise catch up on a few hundred at a time: the "
        "graph's (this scope, or --all-scopes) and, when archive_embedder is set, the session archive's. "
        "Work is saved batch by batch, so an interrupted run loses nothing and the next one goes on.",
    )  # fmt: skip
    embed.add_argument("--all-scopes", action="store_true", help="every user/agent/channel, not just this scope")
    embed.set_defaults(handler=_embed)
