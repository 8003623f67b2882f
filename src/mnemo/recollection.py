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
- **The newer statement first.** Of two results that say different things about one subject, the later
  is lifted above the earlier (:mod:`mnemo.graph.newer`); the earlier stays in the list. Per-turn context
  shows what it picked newest first instead.
- **Deep recall, opt-in.** ``deep=True`` has a local cross-encoder read the best candidates again beside the
  query and reorder them, within a deadline (:mod:`mnemo.deep_recall`); past it, the first ranking stands.

:func:`render_context` turns the result into per-turn context within a character budget, newest first, each
line dated and each message under the session it was said in (so ``session_search`` can open it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from . import deep_recall
from ._time import iso
from .archive.records import SPOKEN_ROLES
from .errors import InvalidArgument
from .graph.newer import later_first
from .graph.recalled import MAX_RECALL_LIMIT, RecalledMemory, recall_memories
from .provenance import Origin, Trust
from .retrieval import merge_ranked
from .retrieval.passages import best_passage, query_stems

if TYPE_CHECKING:
    from .archive import Archive
    from .archive.records import Hit
    from .graph.store import MemoryGraph
    from .graph.types import Memory

RECALLED_ROLES = SPOKEN_ROLES
"""The archived messages recall may return: what was said, never tool output."""

PASSAGE_CHARS = 120
"""The most of one archived message recall shows: its best-matching passage."""

# Candidates fetched from each side for one merged ranking of ``limit`` (each side may fill it alone). Twice
# as many reached the same evidence on LoCoMo dev, for a third more work per turn.
_MIN_POOL = 12


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """An archived message found by recall: who said it (``role``), in which session and when (Unix
    seconds), its best-matching ``passage`` (the whole message when short), how well it matched (``score``,
    on the same scale as the :class:`~mnemo.graph.RecalledMemory` records it is ranked with), and the cosine
    of its embedding and the query's (``similarity``), where the vector channel found it."""

    message_id: int
    session_id: str
    role: str
    passage: str
    score: float
    created_at: float
    similarity: float | None = None

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
    newer_first: bool = True,
    deep: bool = False,
    deep_timeout: float = deep_recall.TIMEOUT,
) -> list[Recalled]:
    """The memories of ``graph`` and the archived messages of ``archive`` most relevant to ``query``, best
    first, at most ``limit`` (1 to ``MAX_RECALL_LIMIT``); either store may be ``None``.

    ``in_context`` is ``(session_id, message_id)``: that session's messages after ``message_id`` are left
    out. ``types`` (memory types) and ``include_history`` apply to memories; a ``types`` filter leaves
    messages out, since they have no type. ``since`` / ``until`` bound both. ``catch_up=False`` recalls
    without first embedding pending memories (see :meth:`~mnemo.graph.MemoryGraph.recall`). ``newer_first``
    lifts the later of two results that disagree about one subject above the earlier. Bad arguments raise
    :class:`~mnemo.errors.InvalidArgument` naming them.

    ``deep`` reorders the best candidates with the cross-encoder (:func:`mnemo.deep_recall.reranked`) if it
    answers within ``deep_timeout`` seconds of this call's start; it reads a memory's content and a message's
    best window of :data:`~mnemo.deep_recall.READ_CHARS`. With ``catch_up`` it first loads the model (raising
    :class:`~mnemo.CrossEncoderMissing` when it is not installed); without, it never waits for the load.
    """
    deadline = time.monotonic() + deep_timeout
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise InvalidArgument("limit", f"must be an integer between 1 and {MAX_RECALL_LIMIT}")
    if not isinstance(query, str):
        raise InvalidArgument("query", f"must be a string, got {type(query).__name__}")
    if not isinstance(deep, bool):
        raise InvalidArgument("deep", "must be true or false")
    pool = max(limit, _MIN_POOL, deep_recall.POOL if deep else 0)
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
    lists: list[list[Recalled]] = [list(memories), list(messages)]
    merged = merge_ranked([[(item, item.score) for item in items] for items in lists], _nearness(lists))
    found = _once_each(merged)
    if deep:
        texts = {hit.message.id: hit.message.text for hit in hits}
        read = partial(_deep_text, texts, stems)
        found = deep_recall.reranked(found, query, deadline, read, wait_for_model=catch_up)
    found = found[:limit]
    return _newer_above_older(found) if newer_first else found


def _deep_text(texts: Mapping[int, str], stems: Collection[str], item: Recalled) -> str:
    if isinstance(item, RecalledMessage):
        return best_passage(texts[item.message_id], stems, deep_recall.READ_CHARS)
    return item.content


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
        similarity=hit.similarity,
    )


def _nearness(lists: Sequence[Sequence[Recalled]]) -> list[float]:
    """How close in meaning each list's nearest item is to the query, as a share of the nearest item of all
    (1 for a list the vector channel found nothing in). Memories and messages are ranked on scales of their
    own, but their embeddings are the same model's, so this is the one measure the two lists share. A memory
    extracted from a long message is a fragment of it, and a long technical chat's nearest messages are much
    nearer than such fragments; a short turn and the fact taken from it are about as near.
    Per turn, any / all: BEAM dev 0.693 / 0.369 -> 0.765 / 0.436, the updated statement first 0.875 -> 1.000;
    LoCoMo dev (homes of their own) 0.812 / 0.687 -> 0.804 / 0.683, the price of the trade."""
    nearest = [max((i.similarity for i in items if i.similarity is not None), default=None) for items in lists]
    top = max((n for n in nearest if n is not None), default=None)
    return [n / top if n is not None and top else 1.0 for n in nearest]


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


def _newer_above_older(items: list[Recalled]) -> list[Recalled]:
    """``items`` with the later of two that say different things about one subject lifted above the earlier
    (see :mod:`mnemo.graph.newer`); each slot keeps its score, so the list stays ranked by score."""
    ordered = later_first(items, _said, lambda item: item.created_at)
    return [
        item if item.score == slot.score else replace(item, score=slot.score)
        for item, slot in zip(ordered, items, strict=True)
    ]


def _said(item: Recalled) -> str:
    return item.passage if isinstance(item, RecalledMessage) else item.content


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

    With ``deep_timeout`` (seconds), the candidates are reordered by deep recall within it; the turn never
    waits for the model to load, and without the model installed it is told once in the log and the first
    ranking stands."""
    # Fetching twice ``most`` reached the same evidence on LoCoMo dev (0.782 / 0.661 any / all either way) for
    # 60% more candidates to read and rank each turn.
    limit = min(most + len(frozen), MAX_RECALL_LIMIT)
    found = (
        # Not lifted: the context lists what it shows newest first anyway, and lifting only changed which
        # candidates made the cut (LoCoMo dev per-turn any / all 0.811 / 0.689 without, 0.809 / 0.687 with).
        recall_everything(
            graph, archive, message, limit=limit, in_context=in_context, catch_up=False, newer_first=False,
            deep=deep_timeout is not None, deep_timeout=deep_timeout or deep_recall.TIMEOUT,
        )  # fmt: skip
        if message.strip()
        else []
    )
    shown = [item for item in found if isinstance(item, RecalledMessage) or comparable(item.content) not in frozen]
    return TurnContext(found, render_context(shown, budget, most=most))


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
