"""What reaches the model: a conversation fed through the README's own agent loop, then, for each question
asked in a new session, which of its evidence messages each door shows (shared by bench/e2e.py and
bench/beam.py).

A conversation is sessions of exchanges; an exchange is one user message and its reply, each the text of
one or more dataset turns (``spans`` say where each turn sits in it). Feeding is ``prepare_messages`` then
``turn_complete`` per exchange and ``close()`` at each session's end, nothing else. An evidence turn counts
as reached when what a door shows overlaps its text: an archived message's passage covering part of that
turn, or a memory extracted from the message holding it (credited to the turn of that message sharing most
words with it).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any, TypeVar

from archive import _percentile
from mnemo import AgentMemory, RecalledMessage, deep_recall
from mnemo.graph.extraction import source_messages
from mnemo.scope import Scope
from mnemo.storage import open_archive, open_graph

Q = TypeVar("Q")

DOORS = ("per-turn context", "recall()", "session_search")
DEEP_DOORS = ("per-turn context (recall_deep)", "recall(deep=True)")
"""The doors deep recall changes, asked in a session opened with ``recall_deep=True`` (``--deep``)."""
_SESSION_LINE = re.compile(r"^- earlier session (\S+) \([^)]*\):$")
_MESSAGE_LINE = re.compile(r"^  - (user|assistant): (.*)$")
_MEMORY_LINE = re.compile(r"^- \[[a-z]+ · [^\]]*\] (.*)$")
_WORDS = re.compile(r"[a-z0-9']+")


def flat(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Message:
    """A message of the run: its text and where each dataset turn sits in it."""

    text: str
    spans: list[tuple[str, int, int]]  # (turn id, start, end) in the flattened text


@dataclass
class Conversation:
    """One user's run: the archived messages (by archive id), each session's ids in order, and the archive
    ids each extracted memory came from."""

    user: str
    messages: dict[int, Message] = field(default_factory=dict)
    by_session: dict[str, list[int]] = field(default_factory=dict)
    memory_sources: dict[str, list[int]] = field(default_factory=dict)  # memory content -> message ids


def joined(turns: Iterable[tuple[str, str]]) -> Message:
    """One message of ``(turn id, text)`` turns, in order."""
    spans, pieces, at = [], [], 0
    for turn_id, text in turns:
        piece = flat(text)
        spans.append((turn_id, at, at + len(piece)))
        pieces.append(piece)
        at += len(piece) + 1
    return Message(" ".join(pieces), spans)


def exchanges(turns: Sequence[tuple[bool, str, str]]) -> Iterator[tuple[Message, Message]]:
    """(user message, reply) runs of ``(said by the user, turn id, text)`` turns: each run of the user's turns,
    then the other side's (a conversation opening with the other side gets an empty user message)."""
    runs: list[tuple[bool, list[tuple[str, str]]]] = []
    for mine, turn_id, text in turns:
        if runs and runs[-1][0] == mine:
            runs[-1][1].append((turn_id, text))
        else:
            runs.append((mine, [(turn_id, text)]))
    if runs and not runs[0][0]:
        runs.insert(0, (True, []))
    for index in range(0, len(runs), 2):
        reply = runs[index + 1][1] if index + 1 < len(runs) else []
        yield joined(runs[index][1]), joined(reply)


TOOL_RESULTS = ("status", "echo")
"""What the tool between a user message and its reply returns, for ``feed(..., tool_calls=...)``: ``status`` a
constant ``{"status": "ok"}``; ``echo`` the user's words, as a notes or web search called with the message as
its query does (tool output near what was said, the case that crowds it)."""


def tool_turn(result: str, said: str) -> list[dict]:
    """One tool call and its result, archived as a tool-using agent's turn is (``turn_complete(...,
    messages=...)``), for the user message ``said``; ``result`` is one of :data:`TOOL_RESULTS`."""
    if result == "echo":
        name, arguments, output = "search_notes", {"query": said[:200]}, {"results": [{"note": said}]}
    else:
        name, arguments, output = "lookup", {}, {"status": "ok"}
    call = {"id": "call-1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-1", "content": json.dumps(output)},
    ]


def feed(
    home: Path, user: str, sessions: Iterable[tuple[str, list[tuple[Message, Message]]]], *, tool_calls: str | None = None
) -> tuple[Conversation, list[float]]:
    """Feed ``sessions`` (key, exchanges) through the loop, one ``AgentMemory`` session each; the run's record
    and the ``prepare_messages`` times (ms). With ``tool_calls`` (one of :data:`TOOL_RESULTS`), every exchange is
    handed over whole with a :func:`tool_turn` between the user's message and the reply."""
    record = Conversation(user)
    turn_ms: list[float] = []
    fed: list[tuple[str, Message, Message]] = []
    for key, pairs in sessions:
        session_id = f"{user}-{key}"
        history: list[dict] = []
        with AgentMemory.open(session_id, home=home, user_id=user) as memory:
            for mine, reply in pairs:
                started = time.perf_counter()
                memory.prepare_messages(mine.text, history)
                turn_ms.append((time.perf_counter() - started) * 1000)
                said = [{"role": "user", "content": mine.text}, {"role": "assistant", "content": reply.text}]
                turn = [said[0], *tool_turn(tool_calls, mine.text), said[1]] if tool_calls else None
                memory.turn_complete(mine.text, reply.text, messages=turn)
                history += turn or said
                fed.append((session_id, mine, reply))
    _index(home, record, fed)
    return record, turn_ms


def _index(home: Path, record: Conversation, fed: list[tuple[str, Message, Message]]) -> None:
    """Match the archive's rows to the messages fed (the order they were archived in) and the extracted
    memories to their messages: what scoring needs, read once after the run."""
    scope = Scope(user_id=record.user)
    archive = open_archive(home / "mnemo.db", scope=scope)
    try:
        stored = {sid: archive.messages(sid) for sid in dict.fromkeys(s for s, _, _ in fed)}
    finally:
        archive.close()
    # The user's and the assistant's texts, in the order archived (a tool call and its result are neither).
    said = {sid: [row for row in rows if row.role == "user" or (row.role == "assistant" and not row.tool_calls)]
            for sid, rows in stored.items()}  # fmt: skip
    cursor = {sid: 0 for sid in stored}
    for session_id, mine, reply in fed:
        rows = said[session_id]
        for message in (mine, reply):
            row = rows[cursor[session_id]]
            cursor[session_id] += 1
            record.messages[row.id] = message
            record.by_session.setdefault(session_id, []).append(row.id)
    graph = open_graph(home / "mnemo.db", scope=scope)
    try:
        memories = graph.memories()
        sources = source_messages(graph, [m.id for m in memories])
        for memory in memories:
            said = [s.message_id for s in sources.get(memory.id, ()) if s.message_id is not None]
            record.memory_sources.setdefault(flat(memory.content), []).extend(said)
    finally:
        graph.close()


def _overlap(message: Message, start: int, end: int) -> set[str]:
    return {turn for turn, a, b in message.spans if min(end, b) - max(start, a) >= min(30, b - a)}


def _passage_turns(record: Conversation, message_id: int, passage: str) -> list[str]:
    message = record.messages.get(message_id)
    if message is None:
        return []
    found: list[str] = []
    for piece in (p.strip() for p in passage.split("…")):
        at = message.text.find(piece) if piece else -1
        if at >= 0:
            found += sorted(_overlap(message, at, at + len(piece)))
    return found


def _memory_turns(record: Conversation, content: str) -> list[str]:
    words = set(_WORDS.findall(content.lower()))
    found: list[str] = []
    for message_id in record.memory_sources.get(flat(content), ()):
        message = record.messages.get(message_id)
        if message is None or not message.spans:
            continue
        best = max(message.spans, key=lambda s: len(words & set(_WORDS.findall(message.text[s[1] : s[2]].lower()))))
        found.append(best[0])
    return found


def context_turns(record: Conversation, block: str) -> list[str]:
    """The turns the per-turn context ``block`` shows, in the order shown."""
    found: list[str] = []
    session_id = ""
    for line in block.splitlines():
        if match := _SESSION_LINE.match(line):
            session_id = match.group(1)
        elif match := _MESSAGE_LINE.match(line):
            for message_id in record.by_session.get(session_id, ()):
                found += _passage_turns(record, message_id, match.group(2))
        elif match := _MEMORY_LINE.match(line):
            found += _memory_turns(record, match.group(1))
    return found


def recall_turns(record: Conversation, items: list) -> list[str]:
    """The turns ``AgentMemory.recall`` results show, best first."""
    found: list[str] = []
    for item in items:
        if isinstance(item, RecalledMessage):
            found += _passage_turns(record, item.message_id, item.passage)
        else:
            found += _memory_turns(record, item.content)
    return found


def search_turns(record: Conversation, result: str) -> list[str]:
    """The turns a ``session_search`` result shows, in its order."""
    found: list[str] = []
    for group in json.loads(result).get("sessions", []):
        for hit in group.get("hits", []):
            for message in hit.get("context", []):
                text = re.sub(r"… \[\d+ more chars\]$", "", str(message.get("content", "")))
                found += _passage_turns(record, int(message.get("id", -1)), flat(text))
    return found


@dataclass
class Door:
    """Per question: whether some evidence turn was reached (``any``), and every one (``all``)."""

    any: list[float] = field(default_factory=list)
    all: list[float] = field(default_factory=list)

    def add(self, evidence: set[str], reached: Iterable[str]) -> None:
        reached = set(reached)
        self.any.append(float(bool(evidence & reached)))
        self.all.append(float(evidence <= reached))


@dataclass(frozen=True)
class Shown:
    """The turns each door showed for one question, in the order shown; the context block's size; how long
    ``prepare_messages`` (``ms``) and ``recall`` (``recall_ms``) took; and whether deep recall was asked."""

    doors: dict[str, list[str]]
    context_chars: int
    ms: float
    recall_ms: float
    deep: bool
    kept: tuple[bool, bool] = (False, False)  # whether deep recall kept the first ranking (context, recall)
    first: list[str] = field(default_factory=list)  # the turns recall's first result shows


def ask(memory: AgentMemory, record: Conversation, question: str, *, deep: bool = False) -> Shown:
    """Ask ``question`` through every door of ``memory`` (a new session of the conversation's user). With
    ``deep``, ``memory`` was opened with ``recall_deep=True``: the doors are :data:`DEEP_DOORS` and recall is
    asked with ``deep=True`` (session_search, which deep recall does not touch, is left out)."""
    kept_before = _KEPT.count
    started = time.perf_counter()
    messages = memory.prepare_messages(question, [])
    ms = (time.perf_counter() - started) * 1000
    kept_between = _KEPT.count
    block = messages[-1]["content"][len(question) :]
    chars = sum(len(line) + 1 for line in block.splitlines() if line.startswith(("- ", "  - ")))
    started = time.perf_counter()
    recalled = memory.recall(question, deep=deep)
    recall_ms = (time.perf_counter() - started) * 1000
    kept = (kept_between > kept_before, _KEPT.count > kept_between)
    context, recall = DEEP_DOORS if deep else DOORS[:2]
    doors = {context: context_turns(record, block), recall: recall_turns(record, recalled)}
    if not deep:
        doors["session_search"] = search_turns(record, memory.handle_tool_call("session_search", {"query": question}))
    return Shown(doors, chars, ms, recall_ms, deep, kept, recall_turns(record, recalled[:1]))


class _Kept(logging.Handler):
    """Counts deep recall's debug records of keeping the first ranking (its deadline passed)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == deep_recall.KEPT:
            self.count += 1


_KEPT = _Kept()
logging.getLogger(deep_recall.log.name).addHandler(_KEPT)
logging.getLogger(deep_recall.log.name).setLevel(logging.DEBUG)


def deep_options(parser: argparse.ArgumentParser) -> None:
    """The benches' ``--deep`` and ``--deep-ms``; :func:`deep_settings` reads them."""
    parser.add_argument("--deep", action="store_true", help="also ask in sessions with deep recall (the deep extra)")
    parser.add_argument("--deep-ms", type=int, default=None, help="deep recall's deadline (default: the setting's)")


def deep_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The settings of the sessions asked with deep recall (``None``: not asked)."""
    if not args.deep:
        return None
    return {"recall_deep": True} | ({"recall_deep_ms": args.deep_ms} if args.deep_ms else {})


def ask_all(
    home: Path, record: Conversation, questions: Iterable[tuple[str, Q]], *, deep: dict[str, Any] | None = None
) -> Iterator[tuple[Q, Shown]]:
    """Each ``(question, item)`` asked (:func:`ask`) in a new session of ``record``'s user, and with ``deep``
    (:func:`deep_settings`) again in one opened with those settings; yields ``(item, shown)``."""
    questions = list(questions)
    for settings in ({}, deep) if deep is not None else ({},):
        deeply = bool(settings)
        session = f"{record.user}-questions{'-deep' if deeply else ''}"
        with AgentMemory.open(session, home=home, user_id=record.user, **settings) as memory:
            for question, item in questions:
                yield item, ask(memory, record, question, deep=deeply)


@dataclass
class Tally:
    """What the questions of a run reached, door by door, and what asking them cost: ``ms`` and ``chars`` per
    question in the plain sessions, and each timed call's times (``calls``), deep ones included."""

    doors: dict[str, Door] = field(default_factory=lambda: {name: Door() for name in DOORS})
    ms: list[float] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    calls: dict[str, list[float]] = field(default_factory=dict)
    kept: dict[str, list[float]] = field(default_factory=dict)  # per deep call: 1.0 where it kept the first ranking
    first: dict[str, list[float]] = field(default_factory=dict)  # per recall door: 1.0 where its first holds evidence

    def add(self, evidence: set[str], shown: Shown) -> None:
        recall_door = DEEP_DOORS[1] if shown.deep else DOORS[1]
        self.first.setdefault(recall_door, []).append(float(bool(evidence & set(shown.first))))
        if shown.deep:
            self._call("prepare_messages (recall_deep)", shown.ms, shown.kept[0])
        else:
            self.ms.append(shown.ms)
            self.chars.append(shown.context_chars)
        recall_kept = shown.kept[1] if shown.deep else None
        self._call("recall(deep=True)" if shown.deep else "recall()", shown.recall_ms, recall_kept)
        for name, reached in shown.doors.items():
            self.doors.setdefault(name, Door()).add(evidence, reached)

    def _call(self, name: str, ms: float, kept: bool | None) -> None:
        self.calls.setdefault(name, []).append(ms)
        if kept is not None:  # a deep call
            self.kept.setdefault(name, []).append(float(kept))

    def call_rows(self) -> list[list[str]]:
        """``[call, p50 ms, p95 ms, share that kept the first ranking]`` per timed call, for the speed table."""
        return [
            [name, f"{_percentile(ms, 50):.1f}", f"{_percentile(ms, 95):.1f}", _share(self.kept.get(name))]
            for name, ms in self.calls.items()
        ]

    def first_rows(self) -> list[list[str]]:
        """``[door, share of questions whose first result holds evidence]`` per recall door."""
        return [[name, f"{fmean(shares):.3f}"] for name, shares in self.first.items()]

    def call_summary(self) -> dict[str, float]:
        """``{call}_ms_p50`` / ``_p95`` / ``_kept`` for the JSON line."""
        summary = {
            f"{_key(name)}_ms_p{q}": round(_percentile(ms, q), 2) for name, ms in self.calls.items() for q in (50, 95)
        }
        summary |= {f"{_key(name)}_kept": round(fmean(kept), 3) for name, kept in self.kept.items()}
        return summary | {f"{_key(name)}_first": round(fmean(first), 3) for name, first in self.first.items()}


def _share(values: list[float] | None) -> str:
    return f"{fmean(values):.3f}" if values else "-"


def _key(name: str) -> str:
    return re.sub(r"[^a-z]+", "_", name.lower()).strip("_")
