"""How every ``mnemo`` subcommand talks to the terminal: JSON for machines, tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any


class CliError(Exception):
    """Ends the command with a one-line reason on stderr and exit code ``code``."""

    def __init__(self, reason: str, code: int = 1) -> None:
        super().__init__(reason)
        self.code = code


def print_json(payload: Any) -> None:
    """One JSON document on stdout."""
    json.dump(payload, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, title: str | None = None) -> None:
    """A readable table of ``rows`` (dicts) showing ``columns`` in order."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    Console(soft_wrap=False).print(table)


@contextmanager
def progress(total: int | None, description: str, *, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr for long work; yields ``advance(n)``. Silent when not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


def lines(items: Iterable[str]) -> None:
    """Plain lines on stdout."""
    for item in items:
        sys.stdout.write(f"{item}\n")
