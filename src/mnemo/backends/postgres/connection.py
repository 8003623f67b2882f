"""A PostgreSQL database as mnemo's stores use it: a connection pool, reads, retried write transactions and
versioned migrations, all inside mnemo's own schema.

Everything mnemo creates lives in one schema (``mnemo`` unless the URL's ``options`` set another search
path), so a database shared with other applications keeps its own tables untouched. Before the first
``CREATE`` the schema is inspected the way :mod:`mnemo.database` inspects an SQLite file: a schema that
exists but holds tables no mnemo component accounts for is refused, and so is one written by a newer mnemo.

Statements are written once for both engines with ``?`` placeholders (SQLite's style); :class:`Executor`
turns them into psycopg's ``%s``. A write runs as one transaction on one pooled connection: when the server
goes away before the commit (a restart, a dropped connection) the whole transaction is retried on a fresh
connection, so nothing is half-applied; a connection lost *during* the commit raises, since whether it landed
is unknown (and retrying could apply it twice).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from ..._db import DatabaseError
from ...errors import ConfigError

log = logging.getLogger("mnemo.backends.postgres")

SCHEMA = "mnemo"
"""The schema holding every table mnemo creates."""

POOL_MAX = 4
# Candidates an HNSW walk keeps; searches ask for at most this many neighbours without raising it.
EF_SEARCH = 200
# Connection failures and serialization conflicts are retried this many times, with jittered backoff, for
# up to about ten seconds in all: long enough for a server restart, short enough to surface an outage.
_RETRIES = 8
_VERSIONS = "schema_versions"

Migration = str | Callable[["Executor"], None]


def is_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{host}"


class Row(tuple):
    """A result row readable by position (``row[0]``) and by column name (``row["id"]``), like
    :class:`sqlite3.Row`, so record constructors serve both engines."""

    _columns: dict[str, int]

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._columns[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._columns)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    return _row_type(tuple(column.name for column in cursor.description or ()))


@lru_cache(maxsize=512)  # a statement's columns are the same each run, and making a class costs tens of µs
def _row_type(names: tuple[str, ...]) -> type[Row]:
    columns = {name: index for index, name in enumerate(names)}
    return type("Row", (Row,), {"_columns": columns, "__slots__": ()})


class Executor:
    """One connection's ``execute`` with SQLite-style ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self.connection = conn

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """Run ``sql`` with ``params`` (positional ``?`` or, with a mapping, named ``:name``); returns the
        cursor (``fetchone``, ``fetchall``, ``rowcount``, iteration)."""
        if not params:
            # Without parameters psycopg sends the text as it is, several statements at once included.
            return self.connection.execute(sql)
        if isinstance(params, Mapping):
            return self.connection.execute(_named(sql), params)
        return self.connection.execute(_placeholders(sql), tuple(params))

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The rows of ``sql`` one at a time, without holding the whole result in memory."""
        with self.connection.cursor() as cursor:
            yield from cursor.stream(_placeholders(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(_placeholders(sql), rows)


_translated: dict[str, str] = {}
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def _placeholders(sql: str) -> str:
    # mnemo's statements keep values out of the SQL text, so a literal '?' or '%' can only be an operator
    # or a LIKE pattern written into the statement; '%' is doubled for psycopg and every '?' is a parameter.
    found = _translated.get(sql)
    if found is None:
        found = sql.replace("%", "%%").replace("?", "%s")
        if len(_translated) < 4096:
            _translated[sql] = found
    return found


def _named(sql: str) -> str:
    # SQLite's ``:name`` as psycopg's ``%(name)s``; a ``::type`` cast is left alone.
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%"))


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database, shared by every store of the process that names the
    same URL (see :meth:`shared`). Thread-safe."""

    def __init__(self, url: str, *, max_size: int = POOL_MAX) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise ConfigError(
                f"a postgresql:// database_url needs psycopg and psycopg-pool ({exc.name} is missing): "
                "pip install 'mnemo-local[postgres]'"
            ) from exc
        self.url = url
        self._psycopg = psycopg
        self._pid = os.getpid()
        self._users = 0
        self._migrated: set[str] = set()
        self._lock = threading.Lock()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "row_factory": _row_factory},
            configure=self._configure,
            check=ConnectionPool.check_connection,
            open=False,
            name="mnemo",
        )
        try:
            self._pool.open(wait=True, timeout=15.0)
        except Exception as exc:
            self._pool.close()
            raise DatabaseError(f"cannot connect to {redact(url)}: {_reason(exc)}") from None

    def _configure(self, conn: Any) -> None:
        # Unqualified names resolve in mnemo's schema first; extensions (vector, pg_trgm) stay reachable in
        # public, where CREATE EXTENSION put them.
        conn.execute(f"SET search_path TO {SCHEMA}, public")
        # psycopg prepares a statement after a few runs, and PostgreSQL then may plan it once for any parameters.
        # mnemo's plans hang on the values (a search window of the newest ids is a short primary-key range, the
        # same condition with an unknown bound looks like a third of the table and goes to the full-text
        # index): a generic plan made archive searches at a million messages 100 times slower. Plan each run.
        conn.execute("SET plan_cache_mode TO force_custom_plan")
        # pgvector's HNSW walks (custom settings, accepted before the extension is loaded): keep enough
        # candidates for a pool of 100 neighbours (its default is 40), and go on past the rows a filter (another
        # scope's) removes. Set once here rather than before each search: a round trip less per search.
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")

    # -- sharing -----------------------------------------------------------------------------------

    _shared: dict[str, PostgresDatabase] = {}
    _shared_lock = threading.Lock()
    # Pools a forked child inherited: their connections are the parent's sockets and their worker threads
    # did not survive the fork, so the child never uses them; it keeps them referenced so that they are never
    # closed from the child either (which would cut the parent's sessions).
    _inherited: list[PostgresDatabase] = []

    @classmethod
    def _forget_after_fork(cls) -> None:
        cls._inherited.extend(cls._shared.values())
        cls._shared = {}
        cls._shared_lock = threading.Lock()

    @classmethod
    def shared(cls, url: str) -> PostgresDatabase:
        """The process's pool for ``url`` (made on first use); pair with :meth:`release`."""
        with cls._shared_lock:
            database = cls._shared.get(url)
            if database is None or database.closed:
                database = cls._shared[url] = cls(url)
            database._users += 1
            return database

    def release(self) -> None:
        """One user of a :meth:`shared` pool is done; the last one closes it."""
        with self._shared_lock:
            self._users -= 1
            if self._users > 0:
                return
            if self._shared.get(self.url) is self:
                del self._shared[self.url]
        self.close()

    @property
    def closed(self) -> bool:
        return bool(self._pool.closed)

    def close(self) -> None:
        """Close every connection of the pool; idempotent. In a forked child it does nothing: the
        connections are the parent's."""
        if os.getpid() == self._pid:
            self._pool.close()

    def _own(self) -> None:
        if os.getpid() != self._pid:
            raise DatabaseError(
                f"the connections to {redact(self.url)} were opened before this process forked; open the store"
                " again in the child"
            )

    # -- work --------------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Executor]:
        """A pooled connection for reads (each statement its own snapshot)."""
        self._own()
        with self._pool.connection() as conn:
            yield Executor(conn)

    def write(self, work: Callable[[Executor], Any]) -> Any:
        """Run ``work(executor)`` in one transaction and commit it; returns what ``work`` returned.

        ``work`` may run more than once: a lost connection or a serialization conflict before the commit
        rolls everything back and starts again on a fresh connection. Errors raised by ``work`` itself
        (a refusal, bad input) roll back and propagate unchanged.
        """
        self._own()
        psycopg = self._psycopg
        for attempt in range(_RETRIES):
            try:
                with self._pool.connection() as conn:
                    executor = Executor(conn)
                    try:
                        conn.execute("BEGIN")
                        result = work(executor)
                    except BaseException:
                        if not conn.closed and not conn.broken:
                            conn.execute("ROLLBACK")
                        raise
                    try:
                        conn.execute("COMMIT")
                    except psycopg.OperationalError as exc:
                        if conn.broken:
                            raise DatabaseError(
                                f"lost the connection to {redact(self.url)} while committing; the write may or may not have landed: {_reason(exc)}"
                            ) from None
                        raise
                    return result
            except (psycopg.OperationalError, psycopg.errors.SerializationFailure,
                    psycopg.errors.DeadlockDetected) as exc:  # fmt: skip
                if attempt == _RETRIES - 1:
                    raise DatabaseError(f"write to {redact(self.url)} failed: {_reason(exc)}") from None
                log.info("%s: retrying a write (%s)", redact(self.url), _reason(exc))
                time.sleep(random.uniform(0.01, 0.05) * (2**attempt))
            except self._pool_errors() as exc:
                raise DatabaseError(f"no connection to {redact(self.url)}: {_reason(exc)}") from None
        raise AssertionError("unreachable")

    def session(self) -> Session:
        """A connection of its own, outside the pool, for a store that keeps one for its lifetime."""
        return Session(self)

    def _connect(self) -> Any:
        try:
            conn = self._psycopg.connect(self.url, autocommit=True, row_factory=_row_factory, connect_timeout=15)
        except self._psycopg.OperationalError as exc:
            raise DatabaseError(f"cannot connect to {redact(self.url)}: {_reason(exc)}") from None
        self._configure(conn)
        return conn

    def _pool_errors(self) -> tuple[type[BaseException], ...]:
        from psycopg_pool import PoolTimeout

        return (PoolTimeout,)

    # -- schema ------------------------------------------------------------------------------------

    def migrate(self, component: str, migrations: Sequence[Migration], owns: Callable[[str], bool]) -> int:
        """Bring ``component``'s tables to ``len(migrations)``, each step with its version bump in one
        transaction, serialised across hosts by an advisory lock. ``owns(table)`` says whether a table of
        mnemo's schema belongs to some mnemo component; a table that belongs to none means the schema is
        not mnemo's, and nothing is written. Returns the version in force."""
        if component in self._migrated:
            return len(migrations)

        def step(executor: Executor) -> int:
            executor.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(f"mnemo:{SCHEMA}:migrate"),))
            _check_owned(executor, owns, self.url)
            executor.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            executor.execute(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA}.{_VERSIONS} (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            row = executor.execute(f"SELECT version FROM {SCHEMA}.{_VERSIONS} WHERE component = ?", (component,)).fetchone()
            current = row[0] if row else 0
            if current > len(migrations):
                raise DatabaseError(
                    f"{component} schema in {redact(self.url)} is at version {current}, newer than this mnemo"
                    f" knows ({len(migrations)}); upgrade mnemo to use it"
                )
            for version in range(current + 1, len(migrations) + 1):
                migration = migrations[version - 1]
                if isinstance(migration, str):
                    executor.execute(migration)
                else:
                    migration(executor)
                executor.execute(
                    f"INSERT INTO {SCHEMA}.{_VERSIONS} (component, version) VALUES (?, ?)"
                    " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                    (component, version),
                )
            return len(migrations)

        version = self.write(step)
        with self._lock:
            self._migrated.add(component)
        return version


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=PostgresDatabase._forget_after_fork)


class Session(Executor):
    """One connection held for a store's lifetime, as an SQLite store holds its one connection: statements
    run in autocommit, and :meth:`transaction` groups writes. A connection the server dropped is replaced
    at the next statement outside a transaction (a read is simply run again); inside one, the loss
    propagates and nothing of the transaction was committed. Not thread-safe: its owner serialises use."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database
        self._depth = 0
        super().__init__(database._connect())

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        self._database._own()
        lost = self._database._psycopg.OperationalError
        try:
            if self._depth:
                return super().execute(sql, params)
            if self.connection.broken or self.connection.closed:
                self._reconnect()
            try:
                return super().execute(sql, params)
            except lost:
                if not self.connection.broken:
                    raise
                self._reconnect()
                return super().execute(sql, params)
        except lost as exc:
            raise DatabaseError(f"{redact(self._database.url)}: {_reason(exc)}") from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        # Not re-run after a lost connection: outside a transaction, some rows may have landed.
        self._database._own()
        if not self._depth and (self.connection.broken or self.connection.closed):
            self._reconnect()
        try:
            super().executemany(sql, rows)
        except self._database._psycopg.OperationalError as exc:
            raise DatabaseError(f"{redact(self._database.url)}: {_reason(exc)}") from None

    def _reconnect(self) -> None:
        # As long as the pool waits for a server coming back (a restart), then the outage is reported.
        log.info("%s: reconnecting", redact(self._database.url))
        self.connection.close()
        for attempt in range(_RETRIES):
            try:
                self.connection = self._database._connect()
                return
            except DatabaseError:
                if attempt == _RETRIES - 1:
                    raise
                time.sleep(random.uniform(0.01, 0.05) * (2**attempt))

    @contextmanager
    def transaction(
        self, locks: Sequence[str] = (), *, snapshot: bool = False, durable: bool = True
    ) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back when it raises. ``locks`` name
        transaction-scoped advisory locks taken first (in sorted order, so two writers never deadlock);
        writers naming the same lock run one after another, as SQLite's ``BEGIN IMMEDIATE`` makes them.
        ``snapshot`` makes every read of the block see one state (``REPEATABLE READ``). ``durable=False``
        lets the commit return before its WAL reaches the disk: a server crash may then lose the last such
        transactions whole (never part of one), so it is only for writes that are hints."""
        if self._depth:
            self._depth += 1  # nested: the outer block commits
            try:
                yield self
            finally:
                self._depth -= 1
            return
        # One round trip opens the transaction, relaxes its commit and takes its locks (the keys are
        # integers made here, so they can be written into the text).
        opening = ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "BEGIN"]
        if not durable:
            opening.append("SET LOCAL synchronous_commit TO off")
        opening += [f"SELECT pg_advisory_xact_lock({_lock_key(name)})" for name in sorted(set(locks))]
        try:
            self.execute("; ".join(opening))
            self._depth = 1
            yield self
        except BaseException:
            self._depth = 0
            if not self.connection.broken and not self.connection.closed:
                self.connection.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self.connection.execute("COMMIT")
        except self._database._psycopg.OperationalError as exc:
            if self.connection.broken:
                raise DatabaseError(
                    f"lost the connection to {redact(self._database.url)} while committing; the write may or may not"
                    f" have landed: {_reason(exc)}"
                ) from None
            raise

    def close(self) -> None:
        self.connection.close()


def _check_owned(executor: Executor, owns: Callable[[str], bool], url: str) -> None:
    tables = [row[0] for row in executor.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", (SCHEMA,)
    ).fetchall()]  # fmt: skip
    foreign = sorted(t for t in tables if t != _VERSIONS and not owns(t))
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise DatabaseError(
            f"schema {SCHEMA!r} in {redact(url)} holds tables that are not mnemo's ({shown}); mnemo leaves it untouched"
        )


def _lock_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
