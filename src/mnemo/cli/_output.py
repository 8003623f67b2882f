"""How every ``mnemo`` subcommand talks to the terminal: JSON for machines, tables for people.

A command's result goes to stdout, once, at the end: one JSON object with ``--json`` (:func:`print_json`),
otherwise text (:func:`lines`, :func:`print_table`, or a :func:`console`). Failures are not printed here:
a command raises (a :class:`CliError`, or any library error) and ``mnemo.cli.main`` reports it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# Exit codes: 0 done, 1 refused or failed, 2 bad command line, 130 interrupted (Ctrl-C), 141 the reader of
# stdout went away (128 + SIGPIPE, what a shell reports for a writer killed by a closed pipe).
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141


class CliError(Exception):
    """Ends the command with a one-line reason and exit code ``code``; ``details`` join the ``--json``
    error object (what a script needs to recover, as the tools' refusals carry)."""

    def __init__(self, reason: str, code: int = EXIT_FAILURE, **details: Any) -> None:
        super().__init__(reason)
        self.code = code
        self.details = details


def print_json(payload: Mapping[str, Any]) -> None:
    """The command's result as one JSON object on stdout. ``"success": true`` leads it unless the
    payload sets ``success`` itself, so every command's output can be checked the same way."""
    document = dict(payload) if "success" in payload else {"success": True, **payload}
    json.dump(document, sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")


def console(*, stderr: bool = False, **options: Any) -> Console:
    """A rich console whose closed pipe raises :class:`BrokenPipeError` (rich would exit the process
    itself), so ``main`` ends every command's closed pipe the same way."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(stderr=stderr, **options)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, title: str | None = None) -> None:
    """A readable table of ``rows`` (dicts) showing ``columns`` in order."""
    from rich.table import Table

    table = Table(title=title, show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    console(soft_wrap=False).print(table)


@contextmanager
def progress(total: int | None, description: str, *, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr for long work; yields ``advance(n)``. Silent when not a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n=1: None
        return
    from rich.progress import Progress

    with Progress(console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


def lines(items: Iterable[str]) -> None:
    """Plain lines on stdout."""
    for item in items:
        sys.stdout.write(f"{item}\n")
