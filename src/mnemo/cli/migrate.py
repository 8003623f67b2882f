"""``mnemo migrate --to postgresql://...``: copy the home's session archive and memory graph into PostgreSQL."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from ._output import CliError, lines, print_json, progress
from ._settings import settings_for


def _migrate(args: argparse.Namespace) -> int:
    from ..backends.postgres.migrate import (
        count_memories,
        count_messages,
        migrate_archive,
        migrate_curated,
        migrate_graph,
    )
    from ..storage import is_url

    if not is_url(args.to):
        raise CliError("--to must be a postgresql:// URL")
    settings = settings_for(args)
    source = settings.database_path
    if not source.is_file():
        raise CliError(f"nothing to copy: {source} does not exist")
    with progress(count_messages(source), "copying archived messages") as advance:
        report = migrate_archive(source, args.to, progress=advance)
    with progress(count_memories(source), "copying graph memories") as advance:
        graph = migrate_graph(source, args.to, progress=advance)
    curated = migrate_curated(settings.memories_dir, args.to, settings.curated_scope) if args.curated else None
    if args.json:
        print_json({"archive": asdict(report), "graph": asdict(graph), "curated_documents": curated})
    else:
        lines([
            f"archive copied to {report.target}: {report.sessions_copied:,} sessions and {report.messages_copied:,}"
            f" messages added ({report.sessions_present:,} and {report.messages_present:,} were already there)",
            f"verified: {report.sessions:,} sessions, {report.messages:,} messages, sha256 {report.sha256[:16]}",
            f"graph copied: {graph.memories_copied:,} memories added ({graph.memories_present:,} were already there)",
            f"verified: {graph.memories:,} memories, {graph.associations:,} edges, {graph.vectors:,} vectors,"
            f" sha256 {graph.sha256[:16]}",
            *([] if curated is None else [
                f"curated memory: {curated} file(s) copied" if curated else "curated memory: already there, left as is"
            ]),
            f"to use it: set database_url = \"{report.target}\" in config.toml (or MNEMO_DATABASE_URL)"
            + (', and curated_backend = "postgres"' if args.curated else ""),
        ])  # fmt: skip
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo migrate``."""
    parser = subparsers.add_parser(
        "migrate", parents=[common], help="copy the home's session archive and memory graph into PostgreSQL (resumable, verified)"
    )
    parser.add_argument("--to", required=True, metavar="URL", help="the postgresql:// database to copy into")
    parser.add_argument(
        "--curated", action="store_true", help="also copy MEMORY.md, USER.md and their history (for curated_backend = \"postgres\")"
    )
    parser.set_defaults(handler=_migrate)
