"""mnemo as LangGraph's long-term memory store: :class:`MnemoStore` (and :class:`AsyncMnemoStore`), a
``langgraph.store.base.BaseStore`` that LangGraph agents and LangMem's memory tools use unchanged.

Imported only by applications that use LangGraph (``pip install 'mnemo-local[langgraph]'``); mnemo itself
never imports it.

How LangGraph's model maps onto mnemo's:

- A namespace is a mnemo scope: its first label is the user id, its second the agent id, the rest (joined
  by ``.``, which LangGraph forbids inside a label) the channel id. So ``("alice", "assistant")`` is the
  memory of user ``alice`` with agent ``assistant``, the same memories :class:`~mnemo.AgentMemory` and the
  other doors see for that scope, and two namespaces never share a scope.
- An item's value is kept whole as a JSON document beside the graph (``langgraph_store.db`` in the home);
  its text (every string in it, or the fields ``index`` names) is one memory of the graph in the
  namespace's scope: scanned for threats and size-limited by the graph, embedded, and found by mnemo's
  hybrid recall when a search has a ``query``. A ``filter`` matches values exactly, with LangGraph's
  ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte`` operators.
- TTL is LangGraph's: minutes since the item was last written or (with ``refresh_ttl``) read. Expired
  items are never returned; :meth:`MnemoStore.sweep_ttl` deletes them with their memories.

Refusals are ``ValueError``\\ s, as LangGraph's own stores raise: LangGraph's
:class:`~langgraph.store.base.InvalidNamespaceError` for a bad namespace, and mnemo's
:class:`~mnemo.errors.InvalidArgument` (a ``ValueError``) for a value that is not JSON, too large, or
refused by the threat scan. A refusal changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from .._db import close, connect, write_transaction
from ..config import Settings, load_settings
from ..embeddings import Embedder, named_embedder
from ..errors import InvalidArgument
from ..graph import BlockedContent, MemoryGraph, MemoryNotFound
from ..safety import refusal_reason
from ..scope import Scope
from ..storage import open_graph

ITEMS_FILENAME = "langgraph_store.db"
MAX_VALUE_BYTES = 256 * 1024
# A query search ranks at most this many memories per scope (mnemo's recall limit).
_RECALL_CEILING = 100
_OPERATORS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: _number(a) > _number(b),
    "$gte": lambda a, b: _number(a) >= _number(b),
    "$lt": lambda a, b: _number(a) < _number(b),
    "$lte": lambda a, b: _number(a) <= _number(b),
}
_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    memory_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    ttl_minutes REAL,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_by_memory ON items (memory_id) WHERE memory_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_by_update ON items (updated_at);
-- The namespaces that hold items, so a search or a listing never scans the items to find them.
CREATE TABLE IF NOT EXISTS namespaces (namespace TEXT PRIMARY KEY) WITHOUT ROWID;
"""
_COLUMNS = "namespace, key, value, memory_id, created_at, updated_at, ttl_minutes"


def namespace_scope(namespace: Sequence[str]) -> Scope:
    """The mnemo scope a LangGraph namespace stands for: (user, agent, the rest joined by ``.``)."""
    try:
        return Scope(namespace[0], namespace[1] if len(namespace) > 1 else "", ".".join(namespace[2:]))
    except InvalidArgument as exc:
        raise InvalidArgument("namespace", f"{tuple(namespace)!r} is not a valid mnemo scope: {exc}") from None


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a range filter compares numbers, got {type(value).__name__}")
    return float(value)


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """Whether ``value`` meets every ``path: expected`` condition (dotted paths reach into objects)."""
    for path, expected in conditions.items():
        actual = _at(value, path)
        if isinstance(expected, Mapping) and expected and all(str(k).startswith("$") for k in expected):
            for operator, operand in expected.items():
                compare = _OPERATORS.get(operator)
                if compare is None:
                    raise ValueError(f"unsupported filter operator {operator!r}; use one of {', '.join(_OPERATORS)}")
                if actual is None and operator != "$ne":
                    return False
                if not compare(actual, operand):
                    return False
        elif actual != expected:
            return False
    return True


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _field_values(value: Any, path: str) -> Iterator[Any]:
    """The values at one LangGraph index path: dotted fields, ``[n]`` and ``[*]`` on lists."""
    current = [value]
    for part in path.replace("[", ".[").split("."):
        if not part or part == "$":
            continue
        following = []
        for node in current:
            if part.startswith("[") and isinstance(node, list):
                index = part[1:-1]
                if index == "*":
                    following.extend(node)
                elif index.lstrip("-").isdigit() and -len(node) <= int(index) < len(node):
                    following.append(node[int(index)])
            elif isinstance(node, Mapping) and part in node:
                following.append(node[part])
        current = following
    yield from current


def indexed_text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text of ``value`` that recall searches: every string in it, or those at ``fields``."""
    if fields is None:
        return "\n".join(_strings(value))
    return "\n".join(text for path in fields for found in _field_values(value, path) for text in _strings(found))


@dataclass
class _Write:
    """One put or delete, checked and ready to write."""

    op: PutOp
    document: str | None
    text: str
    memory_id: str | None = None


def _checked(op: PutOp) -> tuple[str | None, str]:
    """``op``'s value as a JSON document and the text to remember (``None`` and ``""`` for a delete), or
    :class:`InvalidArgument` naming what is wrong."""
    if not op.namespace:
        raise InvalidArgument("namespace", "must not be empty")
    if op.value is None:
        return None, ""
    if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
        raise InvalidArgument("value", f"must be a dict with string keys, got {type(op.value).__name__}")
    try:
        document = json.dumps(op.value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidArgument("value", f"must be JSON: {exc}") from None
    if len(document.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES:
        raise InvalidArgument("value", f"is larger than {MAX_VALUE_BYTES} bytes as JSON")
    if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0):
        raise InvalidArgument("ttl", f"must be a positive number of minutes or None, got {op.ttl!r}")
    fields = None if op.index is None else [] if op.index is False else list(op.index)
    return document, indexed_text(op.value, fields)


@contextmanager
def _refusal() -> Iterator[None]:
    """A refused text (blocked by the threat scan, too long) as the ``ValueError`` LangGraph's stores raise
    for a bad value, naming the value rather than the graph's own field."""
    try:
        yield
    except BlockedContent as exc:
        raise InvalidArgument("value", refusal_reason(exc.findings)) from exc
    except InvalidArgument as exc:
        raise InvalidArgument("value", exc.problem) from exc


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class MnemoStore(BaseStore):
    """A LangGraph ``BaseStore`` on mnemo's memory graph; see the module for how the two map.

    ``home`` and ``**settings`` are mnemo's (see :func:`~mnemo.load_settings`); ``ttl`` is LangGraph's
    ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``); ``embedder`` replaces the one the
    ``graph_embedder`` setting names (``None``: full text only), as for :class:`~mnemo.graph.MemoryGraph`. Open it as LangGraph's own stores
    open: ``with MnemoStore.from_home(path) as store: store.setup()``. Safe to share between threads;
    several processes may share one home.
    """

    supports_ttl = True

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        ttl: TTLConfig | None = None,
        embedder: Embedder | None | NotProvided = NOT_PROVIDED,
        **overrides: Any,
    ) -> None:
        self.settings = settings if settings is not None else load_settings(home, **overrides)
        self.ttl_config = ttl
        if isinstance(embedder, NotProvided):
            embedder = named_embedder(self.settings.graph_embedder, cache_dir=self.settings.cache_directory)
        self._graph = open_graph(self.settings.database_target, embedder=embedder)
        path = self.settings.home / ITEMS_FILENAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect(path)  # mnemo's own settings: WAL, a busy timeout, refusal of a damaged file
        self._lock = threading.RLock()
        self._views: dict[Scope, MemoryGraph] = {}
        self._ready = False
        self._closed = False

    @classmethod
    @contextmanager
    def from_home(
        cls, home: str | Path | None = None, *, ttl: TTLConfig | None = None, **settings: Any
    ) -> Iterator[MnemoStore]:
        """A store on the mnemo home ``home`` (default: ``MNEMO_HOME``), closed when the block ends;
        ``settings`` as for the constructor."""
        store = cls(home, ttl=ttl, **settings)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """Create the item table if it does not exist yet; idempotent (LangGraph's stores ask for it)."""
        self._create_tables()

    def _create_tables(self) -> None:
        with self._lock:
            self._conn.executescript(_SCHEMA)
            self._ready = True

    def close(self) -> None:
        """Close the item table and the graph; idempotent."""
        with self._lock:
            if not self._closed:
                self._closed = True
                close(self._conn)
                self._graph.close()

    def __enter__(self) -> MnemoStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- LangGraph's two entry points --------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (``None`` for a put)."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        with self._lock:
            if not self._ready:
                self._create_tables()
            results: list[Result] = []
            writes: list[PutOp] = []
            for op in ops:
                if isinstance(op, PutOp):
                    writes.append(op)  # consecutive writes go in together, as LangGraph's stores batch them
                    results.append(None)
                    continue
                if writes:
                    self._write(writes)
                    writes = []
                results.append(self._run(op))
            if writes:
                self._write(writes)
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread, so the event loop keeps running while SQLite and the embedder work."""
        return await asyncio.to_thread(self.batch, list(ops))

    def sweep_ttl(self) -> int:
        """Delete every expired item and its memory; returns how many were deleted."""
        with self._lock:
            expired = self._conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),)
            ).fetchall()
            self._write([PutOp(tuple(row[0].split(".")), row[1], None) for row in expired])
            return len(expired)

    def flush(self) -> None:
        """Embed every value still waiting for its vector (a put leaves embedding to later searches, a
        bounded number each): after a bulk load, so the first searches see every item by meaning too."""
        with self._lock:
            if not self._ready:
                self._create_tables()
            scopes = {namespace_scope(n.split(".")) for (n,) in self._conn.execute("SELECT namespace FROM namespaces")}
            for scope in scopes:
                self._view(scope).flush()

    # -- the operations ----------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation: {type(op).__name__}")

    def _view(self, scope: Scope) -> MemoryGraph:
        view = self._views.get(scope)
        if view is None:
            view = self._views[scope] = self._graph.with_scope(scope)
        return view

    def _row(self, namespace: tuple[str, ...], key: str) -> tuple[Any, ...] | None:
        return self._conn.execute(
            f"SELECT {_COLUMNS} FROM items WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
            (".".join(namespace), key, time.time()),
        ).fetchone()

    def _write(self, ops: Sequence[PutOp]) -> None:
        """Apply puts and deletes: all of them or, if any is refused, none. Every value is checked (JSON,
        size, the threat scan) before anything is written; the memories of each scope go in one
        transaction, the items in one more."""
        prepared = [_Write(op, *_checked(op)) for op in ops]
        by_scope: dict[Scope, list[_Write]] = {}
        for write in prepared:
            if write.text:
                by_scope.setdefault(namespace_scope(write.op.namespace), []).append(write)
        if len(by_scope) > 1:
            # Each scope's memories are one transaction: check them all before the first one commits.
            for scope, writes in by_scope.items():
                with _refusal():
                    self._view(scope).check_contents([w.text for w in writes], ["value"] * len(writes))
        written: list[tuple[Scope, str]] = []
        try:
            for scope, writes in by_scope.items():
                with _refusal():
                    memories = self._view(scope).remember_many(
                        [{"content": w.text, "source": f"langgraph:{w.op.key}"} for w in writes]
                    )
                for write, memory in zip(writes, memories, strict=True):
                    write.memory_id = memory.id
                    written.append((scope, memory.id))
            replaced = self._commit_items(prepared)
        except BaseException:
            self._purge(written)  # the items were not written: leave no memory of them behind
            raise
        self._purge(replaced)

    def _commit_items(self, writes: Sequence[_Write]) -> list[tuple[Scope, str]]:
        """Write the items in one transaction; returns the memories of the values they replaced. Read and
        replace share one write lock, so two processes putting one key never both keep a memory."""
        replaced: list[tuple[Scope, str]] = []
        with write_transaction(self._conn):
            now = time.time()
            for write in writes:
                op, namespace = write.op, ".".join(write.op.namespace)
                old = self._conn.execute(
                    "SELECT memory_id, created_at FROM items WHERE namespace = ? AND key = ?", (namespace, op.key)
                ).fetchone()
                if old and old[0]:
                    replaced.append((namespace_scope(op.namespace), old[0]))
                if op.value is None:
                    self._conn.execute("DELETE FROM items WHERE namespace = ? AND key = ?", (namespace, op.key))
                    self._conn.execute(
                        "DELETE FROM namespaces WHERE namespace = ? AND NOT EXISTS"
                        " (SELECT 1 FROM items WHERE namespace = ?)",
                        (namespace, namespace),
                    )
                    continue
                self._conn.execute(
                    "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        namespace, op.key, write.document, write.memory_id, old[1] if old else now, now,
                        None if op.ttl is None else now + op.ttl * 60, op.ttl,
                    ),
                )  # fmt: skip
                self._conn.execute("INSERT OR IGNORE INTO namespaces VALUES (?)", (namespace,))
        return replaced

    def _purge(self, memories: Sequence[tuple[Scope, str]]) -> None:
        """Delete items' memories; one that another process already deleted is gone, as wanted."""
        for scope, memory_id in memories:
            try:
                self._view(scope).purge([memory_id])
            except MemoryNotFound:
                pass

    def _refresh(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Restart the TTL of the items just read (LangGraph's refresh on read)."""
        now = time.time()
        self._conn.executemany(
            "UPDATE items SET expires_at = ? + ttl_minutes * 60 WHERE namespace = ? AND key = ? AND ttl_minutes IS NOT NULL",
            [(now, row[0], row[1]) for row in rows if row[6] is not None],
        )

    def _get(self, op: GetOp) -> Item | None:
        row = self._row(op.namespace, op.key)
        if row is None:
            return None
        if op.refresh_ttl:
            self._refresh([row])
        return Item(
            value=json.loads(row[2]), key=row[1], namespace=op.namespace,
            created_at=_time(row[4]), updated_at=_time(row[5]),
        )  # fmt: skip

    def _under(self, prefix: tuple[str, ...]) -> tuple[str, list[Any]]:
        """SQL matching the namespaces at or under ``prefix`` (a whole-label prefix: no label is cut)."""
        if not prefix:
            return "1", []
        joined = ".".join(prefix)
        # Everything under "a.b" sorts between "a.b." and "a.b/" ("/" follows "."): an index range.
        return "(namespace = ? OR (namespace > ? AND namespace < ?))", [joined, joined + ".", joined + "/"]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if isinstance(op.limit, bool) or not isinstance(op.limit, int) or op.limit < 0:
            raise InvalidArgument("limit", f"must be a non-negative integer, got {op.limit!r}")
        if isinstance(op.offset, bool) or not isinstance(op.offset, int) or op.offset < 0:
            raise InvalidArgument("offset", f"must be a non-negative integer, got {op.offset!r}")
        where, params = self._under(op.namespace_prefix)
        live = f"{where} AND (expires_at IS NULL OR expires_at > ?)"
        params.append(time.time())
        conditions = op.filter or {}
        if op.query and op.query.strip():
            found = self._recalled(op, live, params)
        else:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE {live} ORDER BY updated_at DESC, namespace, key", params
            )
            found = []
            for row in rows:
                if not conditions or _matches(json.loads(row[2]), conditions):
                    found.append((row, None))
                    if len(found) >= op.offset + op.limit:
                        break
        page = found[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            self._refresh([row for row, _ in page])
        return [
            SearchItem(
                namespace=tuple(row[0].split(".")),
                key=row[1],
                value=json.loads(row[2]),
                created_at=_time(row[4]),
                updated_at=_time(row[5]),
                score=score,
            )  # fmt: skip
            for row, score in page
        ]

    def _recalled(self, op: SearchOp, live: str, params: list[Any]) -> list[tuple[tuple[Any, ...], float]]:
        """Items whose memories mnemo's recall finds for ``op.query``, best first, filtered."""
        where, spaces = self._under(op.namespace_prefix)
        scopes = {
            namespace_scope(namespace.split("."))
            for (namespace,) in self._conn.execute(f"SELECT namespace FROM namespaces WHERE {where}", spaces)
        }
        want = min(_RECALL_CEILING, max(1, (op.offset + op.limit) * (4 if op.filter else 2)))
        scores: dict[str, float] = {}
        for scope in scopes:
            for result in self._view(scope).recall(op.query, limit=want):
                scores[result.memory.id] = result.score
        if not scores:
            return []
        rows = []
        ids = list(scores)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows.extend(
                self._conn.execute(
                    f"SELECT {_COLUMNS} FROM items WHERE memory_id IN ({marks}) AND {live}", [*chunk, *params]
                )
            )
        conditions = op.filter or {}
        found = [(row, scores[row[3]]) for row in rows if not conditions or _matches(json.loads(row[2]), conditions)]
        found.sort(key=lambda pair: (-pair[1], pair[0][0], pair[0][1]))
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidArgument("max_depth", f"must be a positive integer or None, got {op.max_depth!r}")
        namespaces = {
            tuple(namespace.split("."))
            for (namespace,) in self._conn.execute(
                "SELECT namespace FROM namespaces n WHERE EXISTS (SELECT 1 FROM items i WHERE i.namespace = n.namespace"
                " AND (i.expires_at IS NULL OR i.expires_at > ?))",
                (time.time(),),
            )
        }
        kept = {
            namespace[: op.max_depth] if op.max_depth is not None else namespace
            for namespace in namespaces
            if all(_namespace_matches(condition, namespace) for condition in op.match_conditions or ())
        }
        return sorted(kept)[op.offset : op.offset + op.limit]


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        labels = namespace[: len(path)]
    elif condition.match_type == "suffix":
        labels = namespace[len(namespace) - len(path) :]
    else:
        raise ValueError(f"unknown namespace match type {condition.match_type!r}; use prefix or suffix")
    return all(wanted in ("*", label) for wanted, label in zip(path, labels))


class AsyncMnemoStore(MnemoStore):
    """:class:`MnemoStore` opened the way LangGraph's async stores are:
    ``async with AsyncMnemoStore.from_home(path) as store: await store.setup()``. Every ``a``-method runs
    in a worker thread, so the event loop never waits on SQLite or the embedder."""

    @classmethod
    @asynccontextmanager
    async def from_home(  # type: ignore[override]
        cls, home: str | Path | None = None, *, ttl: TTLConfig | None = None, **settings: Any
    ) -> AsyncIterator[AsyncMnemoStore]:
        """A store on the mnemo home ``home``, closed when the block ends."""
        store = await asyncio.to_thread(cls, home, ttl=ttl, **settings)
        try:
            yield store
        finally:
            await asyncio.to_thread(store.close)

    async def setup(self) -> None:  # type: ignore[override]
        """Create the item table if needed, off the event loop."""
        await asyncio.to_thread(self._create_tables)


__all__ = ["AsyncMnemoStore", "MnemoStore", "namespace_scope", "indexed_text", "ITEMS_FILENAME", "MAX_VALUE_BYTES"]
