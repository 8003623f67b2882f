"""One recall over everything mnemo keeps: the memory graph's memories and the archived messages of earlier
sessions, ranked together.

What the user said reaches a later session whether or not extraction turned it into a memory: per-turn
context, :meth:`mnemo.AgentMemory.recall` and the ``recall`` tool all come here.

- **Two searches, one ranking.** The graph's recall and the archive's message search each rank their own
  candidates with the shared :class:`~mnemo.retrieval.Fusion`; :func:`~mnemo.retrieval.fusion.merge_ranked`
  puts both lists on one scale (each relevance over its list's best) and interleaves them. The archive
  search runs on a worker thread while the graph is searched, so the two cost about the slower one.
- **One piece of evidence once.** A memory extracted from a message that is also found stands for it (the
  higher ranked of the two is kept).
- **Only what the model does not already hold.** Archived user and assistant messages only (tool output
  is never recalled unasked: it is what untrusted content arrives in); the current session's messages after
  its last compression are left out (``in_context``), since the model still has them.
- **A passage, not a prefix.** A long message contributes the passage that best matches the query.
- **Deep recall, opt-in.** ``deep=True`` reorders the best :data:`DEEP_POOL` by a local cross-encoder read
  together with the query (:func:`deep_rerank`), within a deadline; past it, the first ranking stands.

:func:`render_context` turns the result into per-turn context within a character budget, newest first, each
line dated and each message under the session it was said in (so ``session_search`` can open it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ._time import iso
from .embeddings.cross_encoder import CrossEncoderMissing, shared_cross_encoder
from .errors import InvalidArgument
from .graph.recalled import MAX_RECALL_LIMIT, RecalledMemory, recall_memories
from .provenance import Origin, Trust
from .retrieval import merge_ranked
from .retrieval.passages import best_passage, query_stems

if TYPE_CHECKING:
    from .archive import Archive
    from .archive.records import Hit
    from .graph.store import MemoryGraph
    from .graph.types import Memory

log = logging.getLogger("mnemo.recollection")

RECALLED_ROLES = ("user", "assistant")
"""The archived messages recall may return: what was said, never tool output."""

PASSAGE_CHARS = 120
"""The most of one archived message recall shows: its best-matching passage."""

# Candidates fetched from each side for one merged ranking of ``limit`` (each side may fill it alone). Twice
# as many reached the same evidence on LoCoMo dev, for a third more work per turn.
_MIN_POOL = 12

DEEP_POOL = 20
"""How many of the first ranking's best deep recall reads again with the cross-encoder."""
DEEP_TIMEOUT = 0.3
"""How long deep recall waits for the cross-encoder, in seconds, before keeping the first ranking."""
# Deep recall's fusion: 1/(k + rank) from each ranking. On LoCoMo dev the fused order beat the cross-encoder's
# alone (the cross-encoder misses what only dates or names tie to the question; the first ranking has those).
_DEEP_K = 5


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """An archived message found by recall: who said it (``role``), in which session and when (Unix
    seconds), its best-matching ``passage`` (the whole message when short), and how well it matched
    (``score``, on the same scale as the :class:`~mnemo.graph.RecalledMemory` records it is ranked with)."""

    message_id: int
    session_id: str
    role: str
    passage: str
    score: float
    created_at: float

    def as_tool_dict(self) -> dict[str, Any]:
        """The JSON-ready form the ``recall`` tool returns."""
        return {
            "kind": "message",
            "message_id": self.message_id,
            "session_id": self.session_id,
            "role": self.role,
            "date": iso(self.created_at),
            "passage": self.passage,
            "score": round(self.score, 4),
        }


Recalled = RecalledMemory | RecalledMessage
"""One item of a recall over everything kept."""


def recall_everything(
    graph: MemoryGraph | None,
    archive: Archive | None,
    query: str,
    *,
    limit: int = 8,
    in_context: tuple[str, int] | None = None,
    types: str | Iterable[str] | None = None,
    since: Any = None,
    until: Any = None,
    include_history: bool = False,
    catch_up: bool = True,
    deep: bool = False,
    deep_timeout: float = DEEP_TIMEOUT,
) -> list[Recalled]:
    """The memories of ``graph`` and the archived messages of ``archive`` most relevant to ``query``, best
    first, at most ``limit`` (1 to ``MAX_RECALL_LIMIT``); either store may be ``None``.

    ``in_context`` is ``(session_id, message_id)``: that session's messages after ``message_id`` are left
    out. ``types`` (memory types) and ``include_history`` apply to memories; a ``types`` filter leaves
    messages out, since they have no type. ``since`` / ``until`` bound both. ``catch_up=False`` recalls
    without first embedding pending memories (see :meth:`~mnemo.graph.MemoryGraph.recall`). Bad arguments raise
    :class:`~mnemo.errors.InvalidArgument` naming them.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise InvalidArgument("limit", f"must be an integer between 1 and {MAX_RECALL_LIMIT}")
    if not isinstance(query, str):
        raise InvalidArgument("query", f"must be a string, got {type(query).__name__}")
    pool = max(limit, _MIN_POOL, DEEP_POOL if deep else 0)
    pending: Future[list[Hit]] | None = None
    if archive is not None and types is None and query.strip():
        pending = _in_thread(
            archive.search_messages, query, limit=pool, role=RECALLED_ROLES, since=since, until=until,
            in_context=in_context, snippets=False,
        )  # fmt: skip
    try:
        memories: list[RecalledMemory] = []
        if graph is not None:
            memories = recall_memories(
                graph, query, limit=min(pool, MAX_RECALL_LIMIT), types=types, since=since, until=until,
                include_history=include_history, catch_up=catch_up,
            )  # fmt: skip
    finally:
        if pending is not None:
            wait([pending])  # never leave the search running past this call, whatever happened here
    hits = pending.result() if pending is not None else []
    stems = query_stems(query)
    # A reply that only called tools has no text of its own: what matched was its tool call.
    messages = [
        _message(hit, stems)
        for hit in hits
        if hit.message.text.strip() and not _said_after_untrusted(hit.message.extra)
    ]
    merged = merge_ranked([[(m, m.score) for m in memories], [(m, m.score) for m in messages]])
    found = _once_each(merged)
    if deep:
        shared_cross_encoder().load()
        found = deep_rerank(found, query, deep_timeout)
    return found[:limit]


def deep_rerank(found: Sequence[Recalled], query: str, timeout: float) -> list[Recalled]:
    """``found`` (best first) with its first :data:`DEEP_POOL` reordered by ``1/(5 + rank) + 1/(5 + rank by the
    cross-encoder)``, the cross-encoder reading each item as shown (a memory's content, a message's passage)
    beside ``query``. Scores are left as the first ranking gave them. Unchanged when the cross-encoder has not
    answered within ``timeout`` seconds, or is not loaded yet (its load is started)."""
    head = list(found[:DEEP_POOL])
    if len(head) < 2:
        return list(found)
    scores = shared_cross_encoder().score_within(query, [_shown_text(item) for item in head], timeout)
    if scores is None:
        return list(found)
    by_encoder = sorted(range(len(head)), key=lambda index: -float(scores[index]))
    encoder_rank = {index: rank for rank, index in enumerate(by_encoder, 1)}
    fused = sorted(
        range(len(head)), key=lambda index: -(1 / (_DEEP_K + index + 1) + 1 / (_DEEP_K + encoder_rank[index]))
    )
    return [head[index] for index in fused] + list(found[DEEP_POOL:])


def _shown_text(item: Recalled) -> str:
    return item.passage if isinstance(item, RecalledMessage) else item.content


T = TypeVar("T")


def _in_thread(work: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """``work`` running on a thread of its own. Not the query pool: the archive's search waits there for
    its query's embedding, and a pool thread waiting on its own pool can starve it."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)

    threading.Thread(target=run, name="mnemo-recall-archive", daemon=True).start()
    return future


def _said_after_untrusted(extra: Mapping[str, Any]) -> bool:
    """Whether an archived message is marked as the model's words after untrusted content (see
    :meth:`~mnemo.AgentMemory.turn_complete`): like a tainted write, it is never recalled."""
    marked = extra.get("provenance")
    return isinstance(marked, Mapping) and marked.get("origin") in _UNTRUSTED


_UNTRUSTED = frozenset(origin.value for origin in Origin if origin.trust is Trust.UNTRUSTED)


def _message(hit: Hit, stems: Collection[str]) -> RecalledMessage:
    message = hit.message
    return RecalledMessage(
        message_id=message.id,
        session_id=message.session_id,
        role=message.role,
        passage=best_passage(message.text, stems, PASSAGE_CHARS),
        score=-hit.score,  # the archive ranks lower-is-better
        created_at=message.created_at,
    )


def _once_each(ranked: Sequence[tuple[Recalled, float]]) -> list[Recalled]:
    """``ranked`` rescored to the merged scale, with each message and the memories extracted from it shown
    once: whichever comes first stands for the others."""
    seen_messages: set[int] = set()
    kept: list[Recalled] = []
    for item, merged_score in ranked:
        said = _message_ids(item)
        if said and said <= seen_messages:
            continue
        seen_messages |= said
        kept.append(_rescored(item, merged_score))
    return kept


def _message_ids(item: Recalled) -> set[int]:
    if isinstance(item, RecalledMessage):
        return {item.message_id}
    return {source.message_id for source in item.said_in if source.message_id is not None}


def _rescored(item: Recalled, score: float) -> Recalled:
    return replace(item, score=score)


def memory_line(memory: Memory | RecalledMemory, status: str | None = None) -> str:
    """A memory as one context line: type, date, who it is about, and ``status`` (``"superseded"`` or
    ``"disputed"``) when a newer memory says otherwise."""
    date = (iso(memory.created_at) or "")[:10]
    about = f" · {memory.subject}" if memory.subject else ""
    # A memory a newer one updates or contradicts is shown as such, never as equally true.
    note = f" · {status}: a newer memory says otherwise" if status else ""
    content = " ".join(memory.content.split())
    return f"- [{memory.type.value} · {date}{about}{note}] {content}"


def comparable(text: str) -> str:
    """``text`` as entries are compared to decide they say the same: whitespace collapsed, case folded."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True, slots=True)
class TurnContext:
    """One turn's recall: every candidate considered, best first, and the ``text`` rendered from those shown."""

    found: list[Recalled]
    text: str


def turn_context(
    graph: MemoryGraph | None,
    archive: Archive | None,
    message: str,
    *,
    budget: int,
    most: int,
    frozen: Collection[str] = frozenset(),
    in_context: tuple[str, int] | None = None,
    deep_timeout: float | None = None,
) -> TurnContext:
    """The per-turn context for ``message``, as the graph provider adds it: :func:`recall_everything` (``most``
    candidates, plus room for those left out), less the memories whose text (see :func:`comparable`)
    is in ``frozen`` (the curated snapshot the system prompt already shows), rendered within ``budget``
    characters and ``most`` items by :func:`render_context`. It never waits to embed pending memories: the
    graph's provider embeds them after each turn.

    With ``deep_timeout`` (seconds), the candidates are reordered by :func:`deep_rerank` within it; the turn
    never waits for the model to load, and without the model installed it is told once in the log and the
    first ranking stands."""
    # Fetching twice ``most`` reached the same evidence on LoCoMo dev (0.782 / 0.661 any / all either way) for
    # 60% more candidates to read and rank each turn.
    limit = min(most + len(frozen), MAX_RECALL_LIMIT)
    found: list[Recalled] = []
    if message.strip():
        fetch = max(limit, DEEP_POOL) if deep_timeout is not None else limit
        found = recall_everything(graph, archive, message, limit=fetch, in_context=in_context, catch_up=False)
        if deep_timeout is not None:
            found = _deep_per_turn(found, message, deep_timeout)[:limit]
    shown = [item for item in found if isinstance(item, RecalledMessage) or comparable(item.content) not in frozen]
    return TurnContext(found, render_context(shown, budget, most=most))


_told_missing = threading.Event()


def _deep_per_turn(found: list[Recalled], message: str, timeout: float) -> list[Recalled]:
    try:
        return deep_rerank(found, message, timeout)
    except CrossEncoderMissing as exc:
        if not _told_missing.is_set():
            _told_missing.set()
            log.warning("per-turn recall without its deep second stage: %s", exc)
        return found


def render_context(items: Sequence[Recalled], budget: int, *, most: int | None = None) -> str:
    """Per-turn context for ``items`` (best first): the best that fit in ``budget`` characters (a shorter,
    lower-ranked one may still fit after a long one is passed over), at most ``most`` of them.

    Memories are one line each (:func:`memory_line`); messages are grouped under a line naming their
    session and date, one indented line each (``user: passage``). Memories and sessions are shown newest
    first, and so are the messages within a session, so that a later statement comes before an earlier one
    it updates. ``""`` when nothing fits.
    """
    chosen: list[Recalled] = []
    sessions: set[str] = set()
    used = 0
    for item in items:
        cost = len(_line(item)) + 1
        if isinstance(item, RecalledMessage) and item.session_id not in sessions:
            cost += len(_session_line(item)) + 1
        if used + cost > budget:
            continue
        chosen.append(item)
        used += cost
        if isinstance(item, RecalledMessage):
            sessions.add(item.session_id)
        if most is not None and len(chosen) >= most:
            break
    units: dict[str, list[Recalled]] = {}
    for item in sorted(chosen, key=lambda found: -found.created_at):
        key = f"session:{item.session_id}" if isinstance(item, RecalledMessage) else f"memory:{item.id}"
        units.setdefault(key, []).append(item)
    lines: list[str] = []
    for unit in units.values():
        if isinstance(unit[0], RecalledMessage):
            lines.append(_session_line(unit[0]))
        lines.extend(_line(item) for item in unit)
    return "\n".join(lines)


def _line(item: Recalled) -> str:
    if isinstance(item, RecalledMessage):
        return f"  - {item.role}: {item.passage}"
    return memory_line(item, item.status)


def _session_line(message: RecalledMessage) -> str:
    return f"- earlier session {message.session_id} ({(iso(message.created_at) or '')[:10]}):"
