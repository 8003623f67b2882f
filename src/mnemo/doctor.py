"""``mnemo doctor``: what is wrong with a mnemo home, and how to fix it.

:func:`diagnose` runs every registered check against a home and returns a :class:`Report` of typed
:class:`Finding` objects, one per problem, each with the fix. Nothing is written: the database is
opened read-only and the curated files are only read.

A check is a function taking the :class:`Checkup` (the home, its settings, a read-only connection to
mnemo's database when there is a usable one) and yielding findings. Adding one is a decorator::

    @check("vectors.file")
    def _vector_file(checkup: Checkup) -> Iterator[Finding]:
        ...
        yield checkup.error("the vector file is stale", fix="run `mnemo graph reindex`")

Checks run in registration order; one that raises becomes an error finding of its own instead of
stopping the others.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import quote

from . import _db
from ._files import stale_temp_files
from .archive import schema as archive_schema
from .config import CONFIG_FILENAME, Settings, load_settings, resolve_home
from .curated.entries import joined_length, parse_entries, survives_round_trip
from .curated.files import UnreadableFile, decode
from .curated.store import TARGETS, MemoryStore
from .embeddings import MiniLMEmbedder, named_embedder
from .embeddings.vector_file import SUFFIX as VECTOR_SUFFIX
from .embeddings.vector_file import directory_for
from .errors import ConfigError
from .graph import schema as graph_schema
from .safety import scan
from .storage import open_curated

__all__ = ["Checkup", "Finding", "Report", "Severity", "check", "diagnose"]

# Below these, writes start failing (error) or soon may (warning).
MIN_FREE_BYTES = 16 * 1024 * 1024
LOW_FREE_BYTES = 256 * 1024 * 1024

# mnemo's components in its database, with the schema version this code migrates them to.
SCHEMA_VERSIONS = {
    archive_schema.COMPONENT: len(archive_schema.MIGRATIONS),
    graph_schema.COMPONENT: len(graph_schema.MIGRATIONS),
}


class Severity(StrEnum):
    """How bad a finding is. Any ``error`` makes ``mnemo doctor`` exit non-zero."""

    ERROR = "error"
    """Something does not work, or will fail: memory is lost or refused until it is fixed."""
    WARNING = "warning"
    """Works, but deserves attention (low disk space, pending work, an entry left out of the prompt)."""


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, how bad it is, what is wrong, and how to fix it."""

    check: str
    severity: Severity
    problem: str
    fix: str
    path: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"check": self.check, "severity": self.severity.value, "problem": self.problem, "fix": self.fix, "path": self.path}

    def __str__(self) -> str:
        return f"{self.severity.value}: {self.problem} -> fix: {self.fix}"


@dataclass(frozen=True)
class Report:
    """The result of :func:`diagnose`."""

    home: Path
    checks: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(finding.severity is Severity.ERROR for finding in self.findings)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "home": str(self.home),
            "ok": self.ok,
            "checks": list(self.checks),
            "findings": [finding.as_dict() for finding in self.findings],
        }


@dataclass
class Checkup:
    """What every check is given: the home, its settings, and shared read-only access to its files."""

    home: Path
    settings: Settings
    config_error: str | None = None
    current_check: str = ""
    _connection: sqlite3.Connection | None = field(default=None, repr=False)
    _connection_tried: bool = field(default=False, repr=False)

    def error(self, problem: str, fix: str, path: str | os.PathLike[str] | None = None) -> Finding:
        """An error finding of the running check."""
        return Finding(self.current_check, Severity.ERROR, problem, fix, None if path is None else str(path))

    def warning(self, problem: str, fix: str, path: str | os.PathLike[str] | None = None) -> Finding:
        """A warning finding of the running check."""
        return Finding(self.current_check, Severity.WARNING, problem, fix, None if path is None else str(path))

    @property
    def database_path(self) -> Path:
        """mnemo's database file."""
        return self.settings.database_path

    def database(self) -> sqlite3.Connection | None:
        """A read-only connection to mnemo's database, or None if it is missing or cannot be opened
        (the ``database.file`` check reports why)."""
        if not self._connection_tried:
            self._connection_tried = True
            path = self.database_path
            if path.is_file() and path.stat().st_size and _db.file_problem(path) is None:
                # With no write-ahead log beside it no process has the database open, and reading it as
                # immutable keeps SQLite from creating one: the doctor leaves no file behind.
                immutable = "" if Path(f"{path}-wal").exists() else "&immutable=1"
                try:
                    self._connection = _db.open_connection(path, f"file:{quote(str(path))}?mode=ro{immutable}", uri=True)
                except sqlite3.DatabaseError:
                    self._connection = None
        return self._connection

    def close(self) -> None:
        """Release the database connection."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None


CheckFunction = Callable[[Checkup], Iterable[Finding]]
_CHECKS: list[tuple[str, CheckFunction]] = []


def check(name: str) -> Callable[[CheckFunction], CheckFunction]:
    """Register a check under ``name`` (``area.aspect``); it runs after those registered before it."""

    def register(function: CheckFunction) -> CheckFunction:
        if any(existing == name for existing, _ in _CHECKS):
            raise ValueError(f"a doctor check named {name!r} is already registered")
        _CHECKS.append((name, function))
        return function

    return register


def diagnose(home: str | os.PathLike[str] | None = None, **overrides: Any) -> Report:
    """Run every check on ``home`` (default: ``$MNEMO_HOME`` or ``~/.mnemo``) and report the problems.

    A broken ``config.toml`` is itself a finding; the other checks then use the default settings.
    """
    try:
        settings = load_settings(home, **overrides)
        config_error = None
    except ConfigError as exc:
        config_error = str(exc)
        try:
            settings = Settings(home=resolve_home(home), **overrides)
        except ValueError:
            settings = Settings(home=resolve_home(home))
    checkup = Checkup(settings.home, settings, config_error)
    findings: list[Finding] = []
    try:
        for name, function in _CHECKS:
            checkup.current_check = name
            try:
                findings.extend(function(checkup))
            except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
                findings.append(checkup.error(f"the check itself failed: {type(exc).__name__}: {exc}", "report this as a bug"))
    finally:
        checkup.close()
    return Report(settings.home, tuple(name for name, _ in _CHECKS), tuple(findings))


# --- the checks --------------------------------------------------------------------------------------


@check("config")
def _config(checkup: Checkup) -> Iterator[Finding]:
    if checkup.config_error is not None:
        yield checkup.error(
            checkup.config_error,
            f"correct or remove the setting in {CONFIG_FILENAME} or the MNEMO_* environment",
            checkup.home / CONFIG_FILENAME,
        )


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK | os.X_OK if path.is_dir() else os.W_OK)


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


@check("home")
def _home(checkup: Checkup) -> Iterator[Finding]:
    home = checkup.home
    if not home.exists():
        yield checkup.warning(
            "the home does not exist yet (mnemo creates it on first use)",
            "nothing to do, unless you expected memories here: check --home or MNEMO_HOME",
            home,
        )
        return
    if not home.is_dir():
        yield checkup.error("the home is not a directory", "move the file away or point MNEMO_HOME at a directory", home)
        return
    if _read_only_mount(home):
        yield checkup.error(
            "the home is on a read-only file system: nothing can be remembered",
            "remount it read-write, or point MNEMO_HOME at a writable directory",
            home,
        )
        return
    for path in (home, checkup.settings.memories_dir, checkup.database_path):
        if path.exists() and not _writable(path):
            yield checkup.error(
                f"{path.name} is not writable by this user",
                f"give the user running mnemo write access (e.g. chown -R \"$USER\" '{home}')",
                path,
            )


@check("disk.space")
def _disk_space(checkup: Checkup) -> Iterator[Finding]:
    existing = next((p for p in (checkup.home, *checkup.home.parents) if p.exists()), None)
    if existing is None:
        return
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:
        yield checkup.error(
            f"only {free / 2**20:.1f} MB free on the home's disk: writes fail",
            "free some space (or move the home to a larger disk)",
            existing,
        )
    elif free < LOW_FREE_BYTES:
        yield checkup.warning(
            f"only {free / 2**20:.0f} MB free on the home's disk", "free some space before it runs out", existing
        )


@check("curated.files")
def _curated(checkup: Checkup) -> Iterator[Finding]:
    if checkup.settings.curated_backend != "files":
        return  # kept in the database, which the database.server check reads
    directory = checkup.settings.memories_dir
    if directory.exists() and not directory.is_dir():
        yield checkup.error("the memories path is not a directory", "move the file away so mnemo can create it", directory)
        return
    store = open_curated(checkup.settings)
    for target in TARGETS:
        path = Path(store.path(target))
        if not path.exists():
            continue
        if not path.is_file():
            yield checkup.error(f"{path.name} is not a regular file", f"move it away; mnemo then starts a new {path.name}", path)
            continue
        try:
            text = decode(path.read_bytes())
        except UnreadableFile as exc:
            yield checkup.error(
                f"{path.name} cannot be read ({exc.reason}); mnemo refuses to write to it",
                "convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8) or move it aside",
                path,
            )
            continue
        except OSError as exc:
            yield checkup.error(f"{path.name} cannot be read ({exc.strerror})", "fix its permissions", path)
            continue
        yield from _curated_content(checkup, store, target, path, text)


def _curated_content(checkup: Checkup, store: MemoryStore, target: str, path: Path, text: str) -> Iterator[Finding]:
    if not survives_round_trip(text):
        yield checkup.warning(
            f"{path.name} was edited by hand into a shape a rewrite would change; replace and remove are refused",
            f"tidy it by hand: one entry per block, blocks separated by a line holding only § (`mnemo memory show {target}`)",
            path,
        )
    entries = parse_entries(text)
    used, limit = joined_length(entries), store.char_limit(target)
    if used > limit:
        yield checkup.warning(
            f"{path.name} holds {used:,} characters, over its limit of {limit:,}: only edits that shrink it are accepted",
            f"consolidate or remove entries (`mnemo memory remove {target} ...`) or raise {target}_char_limit",
            path,
        )
    for number, entry in enumerate(entries, 1):
        findings = scan(entry)
        if findings:
            rules = ", ".join(sorted({finding.category for finding in findings}))
            yield checkup.warning(
                f"{path.name} entry {number} is blocked by the threat scan ({rules}) and left out of the prompt",
                f"review and remove it (`mnemo memory show {target}`)",
                path,
            )


_DATABASE_FIXES = {
    "not-a-file": "move it away (mv '{path}' '{path}.moved'); mnemo then creates a new database",
    "unreadable": "give the user running mnemo read and write access to it",
    "not-sqlite": (
        "it was overwritten or belongs to another program: move it aside (mv '{path}' '{path}.damaged') and "
        "restore a backup of it if you have one; otherwise mnemo starts a new, empty database"
    ),
    "truncated": (
        "move it aside (mv '{path}' '{path}.damaged'; mnemo then starts a new one) and recover what you can "
        "with: sqlite3 '{path}.damaged' .recover | sqlite3 '{path}'"
    ),
}


@check("database.file")
def _database_file(checkup: Checkup) -> Iterator[Finding]:
    path = checkup.database_path
    problem = _db.file_problem(path)
    if problem is not None:
        yield checkup.error(
            f"mnemo's database {problem.text}; mnemo will not open it", _DATABASE_FIXES[problem.kind].format(path=path), path
        )


@check("database.integrity")
def _database_integrity(checkup: Checkup) -> Iterator[Finding]:
    path = checkup.database_path
    if not path.is_file() or _db.file_problem(path) is not None or not path.stat().st_size:
        return
    conn = checkup.database()
    if conn is None:
        yield checkup.error(
            "mnemo's database cannot be opened for reading", "check its permissions and the disk (see `dmesg`)", path
        )
        return
    try:
        rows = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        rows = [str(exc)]
    if rows != ["ok"]:
        yield checkup.error(
            f"mnemo's database is damaged: {'; '.join(rows)}",
            f"stop every process using it, then: sqlite3 '{path}' .recover | sqlite3 '{path}.recovered' "
            f"and replace the original with the recovered copy",
            path,
        )


@check("database.server")
def _database_server(checkup: Checkup) -> Iterator[Finding]:
    url = checkup.settings.database_url
    if not url:
        return
    from .backends.postgres import archive_schema as postgres_archive
    from .backends.postgres.connection import SCHEMA, redact

    shown = redact(url)
    try:
        import psycopg
    except ImportError:
        yield checkup.error(
            "database_url names a PostgreSQL server, but psycopg is not installed",
            "pip install 'mnemo-local[postgres]'",
            shown,
        )
        return
    # Read-only questions on one short connection: the doctor creates nothing, not even mnemo's schema.
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            available = {row[0] for row in conn.execute(
                "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm')"
            ).fetchall()}  # fmt: skip
            versions: dict[str, int] = {}
            if conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.schema_versions",)).fetchone()[0] is not None:
                versions = dict(conn.execute(f"SELECT component, version FROM {SCHEMA}.schema_versions").fetchall())
    except psycopg.Error as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        yield checkup.error(
            f"cannot reach mnemo's PostgreSQL database: {reason}",
            "check database_url (MNEMO_DATABASE_URL), that the server runs and that this host may connect",
            shown,
        )
        return
    for extension in sorted({"vector", "pg_trgm"} - available):
        yield checkup.error(
            f"the server has no {extension} extension; mnemo's tables need it",
            "install pgvector and the contrib modules on the server (managed services: enable them)",
            shown,
        )
    known = len(postgres_archive.MIGRATIONS)
    if versions.get(postgres_archive.COMPONENT, 0) > known:
        yield checkup.error(
            f"the archive schema is at version {versions[postgres_archive.COMPONENT]}, newer than this mnemo knows ({known})",
            "upgrade mnemo on this host; this version will not open the database",
            shown,
        )


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@check("database.schema")
def _database_schema(checkup: Checkup) -> Iterator[Finding]:
    conn = checkup.database()
    if conn is None:
        return
    path = checkup.database_path
    tables = _tables(conn)
    versions: dict[str, int] = {}
    if "schema_versions" in tables:
        versions = {row[0]: row[1] for row in conn.execute("SELECT component, version FROM schema_versions")}
    if tables and not set(versions) & set(SCHEMA_VERSIONS):
        yield checkup.error(
            "the file at mnemo's database path is another program's database; mnemo never writes into it",
            "give mnemo a home of its own (MNEMO_HOME) or move that database away",
            path,
        )
        return
    for component, known in SCHEMA_VERSIONS.items():
        version = versions.get(component, 0)
        if version > known:
            yield checkup.error(
                f"the {component} schema is at version {version}, newer than this mnemo knows ({known})",
                "upgrade mnemo (pip install -U mnemo); this version will not open the database",
                path,
            )


def _count(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> int:
    try:
        return int(conn.execute(sql, params).fetchone()[0])
    except sqlite3.OperationalError:  # the component's tables do not exist yet
        return 0


# What each embedder setting leaves waiting for a vector, and when that wait ends by itself.
_EMBEDDED = (
    (
        "graph_embedder",
        "SELECT COUNT(*) FROM graph_memories m WHERE NOT EXISTS (SELECT 1 FROM graph_vectors v"
        " WHERE v.memory_id = m.id AND v.model = ? AND v.dim = ?)",
        "graph memories have no {model} vector yet (full-text recall still finds them)",
        "nothing to do: each recall embeds a batch; or set graph_embedder = \"none\" to stop using vectors",
    ),
    (
        "archive_embedder",
        "SELECT COUNT(*) FROM messages m WHERE m.content != '' AND NOT EXISTS (SELECT 1 FROM message_vectors v"
        " WHERE v.message_id = m.id AND v.model = ? AND v.dim = ?)",
        "archived messages have no {model} vector yet (full-text search still finds them)",
        "nothing to do: each finished turn and search embeds a batch",
    ),
)


@check("embeddings.weights")
def _weights_cache(checkup: Checkup) -> Iterator[Finding]:
    if "minilm" not in {checkup.settings.graph_embedder, checkup.settings.archive_embedder}:
        return
    found = MiniLMEmbedder(cache_dir=checkup.settings.cache_directory).weights_cache_problem()
    if found is not None:
        path, problem = found
        yield checkup.warning(
            f"the model's cached float32 weights {problem}; new processes convert them instead (~35 ms each)",
            "nothing to do if the file is damaged (the next query rewrites it); otherwise point MNEMO_CACHE_DIR "
            "at a writable directory",
            path,
        )


def _leftover_places(checkup: Checkup) -> Iterator[tuple[Path, str, dict[str, bool]]]:
    """Where mnemo writes whole files, and the names of the targets its temp files there belong to."""
    settings = checkup.settings
    yield settings.memories_dir, "MEMORY.md", {}
    yield settings.memories_dir, "USER.md", {}
    yield settings.cache_directory, "*.safetensors", {}
    vectors = directory_for(settings.database_path)
    if vectors is not None:
        yield vectors, f"*{VECTOR_SUFFIX}", {"pid_names": True}
    yield checkup.home / "memory-files", "*", {"recursive": True}


@check("files.leftovers")
def _leftover_temp_files(checkup: Checkup) -> Iterator[Finding]:
    found: dict[Path, list[Path]] = {}
    for directory, name, options in _leftover_places(checkup):
        if directory.is_dir():
            for path in stale_temp_files(directory, name, **options):
                found.setdefault(directory, []).append(path)
    for directory, paths in found.items():
        size = sum(path.stat().st_size for path in paths if path.exists())
        yield checkup.warning(
            f"{len(paths)} temp file(s), {size / 2**20:.1f} MB, left by a mnemo process killed while writing; "
            "nothing reads them",
            "remove them (no process is writing them; the next write of the same file also does): rm -- "
            + " ".join(f"'{path}'" for path in paths),
            directory,
        )


@check("embeddings.pending")
def _pending_embeddings(checkup: Checkup) -> Iterator[Finding]:
    conn = checkup.database()
    if conn is None:
        return
    for setting, sql, problem, fix in _EMBEDDED:
        embedder = named_embedder(getattr(checkup.settings, setting))
        if embedder is None:
            continue
        pending = _count(conn, sql, (embedder.name, embedder.dim))
        if pending:
            yield checkup.warning(f"{pending:,} " + problem.format(model=embedder.name), fix, checkup.database_path)
