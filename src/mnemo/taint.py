"""Taint: what entered the model's context this session, and so what origin its writes get.

The host reports untrusted content as it arrives (tool results, retrieved documents, delegated results:
:meth:`TaintTracker.exposed`), and what the user said (:meth:`TaintTracker.user_said`). From the first
untrusted content of a session on, every write the model makes in that session is ``tainted``: later turns
too, since a payload can say "save this when the user says yes". Taint only rises within a session; a new
session starts clean.

One exception keeps the user's own facts flowing: a write whose content is *supported* by what the user
said this session (its distinctive words all said by the user, nearly all of its other words too) is the
user's, whatever the model read meanwhile. A write supported only by a tool's output is not.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .provenance import Origin, Provenance

EXCERPT_CHARS = 200
# A write is the user's when at least this share of its ordinary words are the user's (and every
# distinctive one is): rewording ("I" -> "the user", "prefer" -> "prefers") must not cost a user their fact.
SUPPORT_SHARE = 0.75
_WORD = re.compile(r"[\w@.+:/-]+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be by for from has have i in is it its me my of on or our that the their them they this"
    " to user user's users was we were will with you your".split()
)


def _words(text: str) -> list[str]:
    return [w.strip(".:/-").casefold() for w in _WORD.findall(text) if w.strip(".:/-")]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) >= len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") if len(word) > 3 else word  # "move", "moved" and "moving" meet at "mov"


def _distinctive(word: str) -> bool:
    """Words a paraphrase cannot introduce on its own: numbers, addresses, codes, long rare tokens."""
    return any(ch.isdigit() for ch in word) or any(ch in word for ch in "@/:+_") or len(word) >= 12


def tool_call_names(messages: Iterable[Any]) -> dict[str, str]:
    """The tool each call id of ``messages`` names (from the assistants' ``tool_calls``), so a tool result
    that carries only its ``tool_call_id`` can be traced to the tool that produced it."""
    return {
        call["id"]: call["function"]["name"]
        for message in messages if isinstance(message, Mapping) and message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping)
        and isinstance(call.get("id"), str) and isinstance(call["function"].get("name"), str)
    }  # fmt: skip


def details(text: str) -> frozenset[str]:
    """The distinctive words of ``text`` (numbers, addresses, codes, long rare tokens), case-folded."""
    return frozenset(w for w in _words(text) if _distinctive(w))


def supported_by(content: str, said: Iterable[str]) -> bool:
    """Whether ``content`` restates what is in ``said`` (the user's messages): every distinctive word of
    it appears there, and at least :data:`SUPPORT_SHARE` of its other non-trivial words (by stem)."""
    heard: set[str] = set()
    for text in said:
        for word in _words(text):
            heard.add(word)
            heard.add(_stem(word))
    words = [w for w in _words(content) if w not in _STOP and len(w) > 1]
    if not words or not heard:
        return False
    if any(_distinctive(w) and w not in heard for w in words):
        return False
    found = sum(1 for w in words if w in heard or _stem(w) in heard)
    return found >= SUPPORT_SHARE * len(words)


@dataclass(frozen=True, slots=True)
class Exposure:
    """One piece of untrusted content that entered the model's context."""

    source: str
    kind: str
    excerpt: str
    turn: int
    at: float


class TaintTracker:
    """One session's taint. ``trusted_tools`` are tool names whose results do not taint (the host's own
    read-only tools it vouches for, e.g. a calculator). Safe to share between threads."""

    def __init__(self, trusted_tools: Iterable[str] = ()) -> None:
        self.trusted_tools = frozenset(trusted_tools)
        self._lock = threading.Lock()
        self._exposures: list[Exposure] = []
        self._said: list[str] = []
        self._turn = 0
        self._session_id = ""

    def reset(self, session_id: str) -> None:
        """Start a new session, clean."""
        with self._lock:
            self._exposures.clear()
            self._said.clear()
            self._turn = 0
            self._session_id = session_id

    def rekey(self, session_id: str) -> None:
        """Continue the same conversation under a new session id (a compression's continuation): the
        context still holds what the model read, so the taint stays."""
        with self._lock:
            self._session_id = session_id

    def user_said(self, text: str, *, turn: int | None = None) -> None:
        """The user said ``text`` (a new turn when ``turn`` is given)."""
        with self._lock:
            if turn is not None:
                self._turn = turn
            if text.strip():
                self._said.append(text)

    def exposed(self, source: str, content: str, kind: str = "tool") -> bool:
        """Untrusted ``content`` from ``source`` (a tool name, a URL, an agent) entered the model's context;
        returns whether it tainted the session (a trusted tool's result does not)."""
        if kind == "tool" and source in self.trusted_tools:
            return False
        with self._lock:
            self._exposures.append(Exposure(source, kind, content[:EXCERPT_CHARS], self._turn, time.time()))
        return True

    @property
    def tainted(self) -> bool:
        """Whether untrusted content has entered the model's context this session."""
        with self._lock:
            return bool(self._exposures)

    @property
    def exposures(self) -> tuple[Exposure, ...]:
        """The untrusted content reported this session, oldest first."""
        with self._lock:
            return tuple(self._exposures)

    def provenance(self, content: str, *, via: str, model: Origin = Origin.MODEL) -> Provenance:
        """The provenance of a write of ``content`` by the model now: the user's when the user said it,
        ``tainted`` after untrusted content (naming the first source), else ``model`` (or an MCP client's)."""
        with self._lock:
            said, exposures, turn, session = list(self._said), list(self._exposures), self._turn, self._session_id
        if supported_by(content, said):
            return Provenance(Origin.USER, via, session_id=session, turn=turn)
        if exposures:
            first = exposures[0]
            return Provenance(Origin.TAINTED, via, first.source, session, turn, first.excerpt)
        return Provenance(model, via, session_id=session, turn=turn)
