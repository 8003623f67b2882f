"""Which database file in a home is mnemo's, and the check that keeps mnemo out of anyone else's.

mnemo's archive and graph live in ``HOME/mnemo.db``. A home may hold other programs' files: with
``MNEMO_HOME=~/.hermes`` it holds Hermes Agent's ``state.db``, whose tables even share names with
mnemo's (``sessions``, ``messages``). So before mnemo writes anything to a database (before the WAL
switch, before a ``CREATE TABLE``, before a migration) :func:`check_owned` opens the file read-only and
inspects it:

- no file, an empty file or a database without tables: mnemo's to create;
- every table belongs to a component recorded in ``schema_versions`` (``archive``: ``sessions``,
  ``messages`` and ``message*`` tables; ``graph``: ``graph_*`` tables) and every recorded version is one
  this code knows: mnemo's;
- a recorded component or version this code does not know: :class:`DatabaseTooNew`;
- anything else (a table no mnemo component accounts for, a file that is not SQLite):
  :class:`ForeignDatabase`.

Both errors are one line naming the file, and the file is left exactly as it was.

A home made by mnemo 0.1 keeps its database under the old name ``state.db``. :func:`database_path`
keeps using that file when ``mnemo.db`` does not exist and ``state.db`` is recognisably mnemo's (its
``schema_versions`` rows and nothing foreign); it is never renamed, since another process may hold it
open. Any other ``state.db`` is only ever read, through an immutable read-only handle that cannot
create journal files beside it, and only while ``mnemo.db`` does not exist yet.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from . import _db
from .errors import ConfigError

DATABASE_FILENAME = "mnemo.db"
LEGACY_DATABASE_FILENAME = "state.db"

_ARCHIVE_TABLES = ("sessions", "messages")
_ARCHIVE_PREFIX = "message"  # messages_fts and its shadow tables, messages_cjk*, message_vectors
_GRAPH_PREFIX = "graph_"
_CURATED_PREFIX = "curated_"  # PostgreSQL only: SQLite keeps curated memory in files


class ForeignDatabase(_db.DatabaseError):
    """A database file mnemo would use belongs to another program (or is not SQLite); it is left untouched."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"{path} is not mnemo's database ({reason}); mnemo leaves it untouched")


class DatabaseTooNew(_db.DatabaseError):
    """The database was written by a newer mnemo than this one; it is left untouched."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"{path} was written by a newer mnemo ({reason}); upgrade mnemo to use it")


def known_versions() -> dict[str, int]:
    """The schema version of each component this code can open (the latest it migrates to)."""
    from .archive import schema as archive_schema
    from .graph import schema as graph_schema

    return {
        archive_schema.COMPONENT: len(archive_schema.MIGRATIONS),
        graph_schema.COMPONENT: len(graph_schema.MIGRATIONS),
    }


def table_owner(table: str) -> str | None:
    """The mnemo component a table of this name belongs to (``archive``, ``graph``), or ``None``."""
    if table in _ARCHIVE_TABLES or table.startswith(_ARCHIVE_PREFIX):
        return "archive"
    if table.startswith(_GRAPH_PREFIX):
        return "graph"
    if table.startswith(_CURATED_PREFIX):
        return "curated"
    return None


def _read_only(path: Path, *, immutable: bool) -> sqlite3.Connection:
    # immutable=1 takes no locks and never creates -wal/-shm files: right for a file that may be another
    # program's. mode=ro still honours a live WAL, which mnemo's own busy database needs for a true read.
    flag = "immutable=1" if immutable else "mode=ro"
    return _db.open_connection(path, f"file:{quote(str(path))}?{flag}", uri=True, isolation_level=None)


def _inspect(path: Path, *, immutable: bool) -> tuple[list[str], dict[str, int]]:
    """The tables (and views) of ``path`` and its ``schema_versions`` rows, read without writing."""
    conn = _read_only(path, immutable=immutable)
    try:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite%'"
            )
        ]
        versions: dict[str, int] = {}
        if "schema_versions" in tables:
            versions = {str(c): int(v) for c, v in conn.execute("SELECT component, version FROM schema_versions")}
        return tables, versions
    finally:
        conn.close()


def check_owned(
    path: str | Path, known: Mapping[str, int] | None = None, *, immutable: bool = False
) -> dict[str, int]:
    """Raise :class:`ForeignDatabase` or :class:`DatabaseTooNew` unless ``path`` is mnemo's to open and
    write (or does not exist yet); return its recorded schema versions (empty for a new database).
    Reads only; never creates or changes a file."""
    path = Path(path)
    try:
        if path.stat().st_size == 0:
            return {}
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _db.DatabaseError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        tables, versions = _inspect(path, immutable=immutable)
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise ForeignDatabase(path, "not an SQLite database") from exc
        # An SQLite file that cannot be read (damaged, locked out) may well be mnemo's own: say so plainly.
        raise _db.DatabaseError(f"cannot read {path}: {exc}") from exc
    if not tables:
        return {}
    # Tables no mnemo component could have made are named first: they tell whose file it is.
    unowned = sorted((t for t in tables if t != "schema_versions" and table_owner(t) not in versions),
                     key=lambda t: (table_owner(t) is not None, t))  # fmt: skip
    if unowned:
        shown = ", ".join(unowned[:5]) + (", …" if len(unowned) > 5 else "")
        raise ForeignDatabase(path, f"tables not made by mnemo: {shown}")
    if not versions:
        raise ForeignDatabase(path, "no mnemo schema versions recorded")
    known = known_versions() if known is None else known
    for component, version in sorted(versions.items()):
        if component not in known:
            raise DatabaseTooNew(path, f"unknown component {component!r}")
        if version > known[component]:
            raise DatabaseTooNew(path, f"{component} schema {version}, this mnemo knows {known[component]}")
    return versions


_LEGACY_READS = 5


def _is_mnemo_legacy(path: Path) -> bool:
    # A database in use (its write-ahead log holds pages) is read through SQLite's locks: an immutable
    # handle would read a checkpoint in progress as a torn file, or miss tables still in the log, and
    # mnemo would then start a second database beside the first, splitting a user's memory in two. A quiet
    # one is read through an immutable handle, which creates nothing beside another program's file. A
    # read that still fails is an error, never a verdict.
    wal = path.with_name(path.name + "-wal")
    live = wal.is_file() and wal.stat().st_size > 0
    for attempt in range(_LEGACY_READS):
        try:
            return bool(check_owned(path, immutable=not live))
        except (ForeignDatabase, DatabaseTooNew):
            return False
        except _db.DatabaseError:
            if attempt + 1 == _LEGACY_READS:
                raise
        time.sleep(0.02 * 2**attempt)
    return False


def database_path(home: str | Path) -> Path:
    """mnemo's database in ``home``: ``mnemo.db``, or the ``state.db`` of a mnemo 0.1 home (see above)."""
    home = Path(home)
    current = home / DATABASE_FILENAME
    if current.exists():
        return current
    legacy = home / LEGACY_DATABASE_FILENAME
    if legacy.is_file() and _is_mnemo_legacy(legacy):
        return legacy
    return current


def refuse_old_config_key(provider: str, config: Mapping[str, object]) -> None:
    """A provider table still naming the database ``state_db`` (mnemo 0.1) gets a :class:`ConfigError`
    saying the key is now ``database``, rather than being silently ignored."""
    if "state_db" in config:
        raise ConfigError(f"{provider} provider: the config key 'state_db' is now called 'database'")


def connect_owned(path: str | Path) -> sqlite3.Connection:
    """:func:`mnemo._db.connect` for writing, after :func:`check_owned` found the file to be mnemo's."""
    if isinstance(path, str) and "://" in path:
        # A database URL is never a file name: SQLite would make a file of that odd name and say nothing.
        raise _db.DatabaseError(f"{path.split('://', 1)[0]}:// names a database server, not an SQLite file; open it with open_archive() or open_graph()")
    check_owned(path)
    return _db.connect(path)
