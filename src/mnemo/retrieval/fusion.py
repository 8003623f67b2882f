"""Hybrid ranking: one fusion of full-text and vector evidence, shared by the memory graph and the archive.

Callers fetch candidates however suits their store (FTS5 bm25, bounded index probes, a vector index) and
hand the raw signals here; everything that turns signals into one relevance lives in :class:`Fusion`:

1. **Normalised, weighted channels.** Full-text scores (bm25, positive = better) are scaled to the best
   candidate; cosine similarities are scaled from a noise floor to the best candidate. The channels are
   then summed with fixed weights. Equal-weight reciprocal rank fusion throws away how *much* better the
   top full-text hit is, and on conversational data with a small embedding model it loses to full text
   alone (measured on LoCoMo: see ``bench/locomo.py``); a weighted sum of normalised scores wins there.
2. **Context.** In a conversation the words of a question and of its answer are often in adjacent turns,
   so an item borrows a fraction of the relevance of the items one and two places away in the same group
   (a session, or the memories written from one source). A question is a pointer, not an answer: the
   item right after a question borrows more of its relevance, and the question itself keeps less. A caller
   may add *borrowers*, items no channel found (the archive: the replies to its best candidates that ask),
   ranked by what they borrow alone: "I've had them for 3 years" shares no word with "how long has Nate had
   his turtles?", the question before it does.
3. **Group evidence.** Items in the group whose best item is most relevant get a small boost, so a
   session that clearly holds the answer contributes its other relevant turns too; and when the caller
   scores whole groups by full text (each group as one document), that score counts as well, which finds
   the session that talks about a topic even where no single turn names all of it.
4. **Focus.** Items about someone the query names (their ``subject``) are scaled up, and so are items
   written in a period the query names ("in August 2023", "last week": see :mod:`mnemo.retrieval.dates`).

Importance/recency priors are applied last by :func:`with_prior`: they reorder near-ties and never
lift an item without relevance.

Every default below was measured on LoCoMo dev (``bench/locomo.py``) and checked by leave-one-conversation-out
cross-validation, so the values hold on conversations they were not chosen on.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

FTS = "fts"
VECTOR = "vector"

# Full text carries more signal than the small model (MiniLM-L6); 0.5-1.0 for vectors were within a point of
# each other, and 0.75 was chosen in every cross-validation fold.
CHANNEL_WEIGHTS: Mapping[str, float] = {FTS: 1.0, VECTOR: 0.75}
# Cosine below this is noise for a small sentence model, not a match.
VECTOR_FLOOR = 0.2
# Share of a neighbour's relevance an item borrows, by distance (1, 2) within its group.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (0.3, 0.1)
# Extra share of a question's relevance the next item in its group borrows (its likely answer), and the
# share a question gives up: a question echoes the words of what is asked later, its answer holds the facts.
ANSWER_SHARE = 0.2
QUESTION_DAMPING = 0.2
# How much of its group's best relevance (scaled to the best group) an item gains.
GROUP_WEIGHT = 0.2
# How much of its group's own full-text score (scaled to the best group) an item gains.
GROUP_TEXT_WEIGHT = 0.5
# Relevance multipliers for items whose subject the query names (1 + FOCUS_BOOST) and for items written in
# a period it names (1 + TIME_BOOST). A named date is a strong hint: 0.2-1.0 all helped, 0.5 is the middle.
FOCUS_BOOST = 0.3
TIME_BOOST = 0.5


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an item sits: its group (session, source), its position in it (consecutive integers for
    consecutive items), and whether it asks a question (see :func:`asks_question`)."""

    group: Hashable
    position: int
    asks: bool = False


def asks_question(text: str) -> bool:
    """Whether ``text`` ends by asking: its last sentence mark (``.``, ``!``, ``?``) is a question mark.
    Trailing material without one, such as an attachment's caption, does not hide the question."""
    for char in reversed(text):
        if char in ".!?":
            return char == "?"
    return False


def scale_to_best(raw: Mapping[K, float]) -> dict[K, float]:
    """Positive scores divided by the best one, so the channel lies in [0, 1]; non-positive ones become 0."""
    if not raw:
        return {}
    best = max(raw.values())
    if best <= 0:
        return {key: (1.0 if value == best else 0.0) for key, value in raw.items()}
    return {key: max(value, 0.0) / best for key, value in raw.items()}


def scale_similarity(raw: Mapping[K, float], floor: float) -> dict[K, float]:
    """Cosine similarities mapped to [0, 1]: ``floor`` and below to 0, the best candidate to 1; items at or
    below the floor are dropped."""
    above = {key: value - floor for key, value in raw.items() if value > floor}
    return scale_to_best(above)


@dataclass(frozen=True)
class Fusion:
    """The ranking parameters; the defaults are the measured ones (see the module docstring)."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(CHANNEL_WEIGHTS))
    vector_floor: float = VECTOR_FLOOR
    neighbours: tuple[float, ...] = NEIGHBOUR_WEIGHTS
    answer_share: float = ANSWER_SHARE
    question_damping: float = QUESTION_DAMPING
    group_weight: float = GROUP_WEIGHT
    group_text_weight: float = GROUP_TEXT_WEIGHT
    focus_boost: float = FOCUS_BOOST
    time_boost: float = TIME_BOOST

    def normalise(self, raw: Mapping[str, Mapping[K, float]]) -> dict[str, dict[K, float]]:
        """Each channel's raw signals in [0, 1]: ``vector`` as cosine above the floor, others (bm25-like,
        larger is better) scaled to their best."""
        return {
            name: scale_similarity(values, self.vector_floor) if name == VECTOR else scale_to_best(values)
            for name, values in raw.items()
        }

    def relevance(
        self,
        channels: Mapping[str, Mapping[K, float]],
        placements: Mapping[K, Placement] | None = None,
        *,
        group_text: Mapping[Hashable, float] | None = None,
        focus: Collection[K] = (),
        timely: Collection[K] = (),
        borrowers: Collection[K] = (),
    ) -> dict[K, float]:
        """One relevance per candidate from already normalised ``channels`` (see :meth:`normalise`).

        With ``placements`` (candidates without one stand alone): context, questions and group evidence;
        ``group_text`` is a full-text score per group (larger is better), ``focus`` the candidates about
        someone the query names, ``timely`` those written in a period it names. ``borrowers`` (with a
        placement, in no channel) are ranked by what they borrow from their neighbours; one that borrows
        nothing is left out.
        """
        base: dict[K, float] = {}
        for name, values in channels.items():
            weight = self.weights.get(name, 0.0)
            if weight <= 0:
                continue
            for key, value in values.items():
                if value > 0:
                    base[key] = base.get(key, 0.0) + weight * value
        if placements and base:
            lent = [key for key in borrowers if key not in base and key in placements]
            base.update(dict.fromkeys(lent, 0.0))
            base = self._with_context(base, placements)
            for key in lent:
                if base[key] <= 0:
                    del base[key]
            base = self._with_group(base, placements, group_text or {})
        for chosen, boost in ((focus, self.focus_boost), (timely, self.time_boost)):
            if chosen and boost > 0:
                base = {key: value * (1.0 + boost) if key in chosen else value for key, value in base.items()}
        return base

    def _with_context(self, base: dict[K, float], placements: Mapping[K, Placement]) -> dict[K, float]:
        at = {(p.group, p.position): key for key, p in placements.items() if key in base}
        own = dict(base)
        if self.answer_share > 0:
            for key, value in base.items():
                place = placements.get(key)
                before = None if place is None else at.get((place.group, place.position - 1))
                if before is not None and placements[before].asks:
                    own[key] = value + self.answer_share * base[before]
        smoothed = dict(own)
        for key, value in own.items():
            place = placements.get(key)
            if place is None:
                continue
            total = value
            for distance, share in enumerate(self.neighbours, start=1):
                for other in (place.position - distance, place.position + distance):
                    neighbour = at.get((place.group, other))
                    if neighbour is not None:
                        total += share * own[neighbour]
            smoothed[key] = total * (1.0 - self.question_damping) if place.asks else total
        return smoothed

    def _with_group(
        self, scores: dict[K, float], placements: Mapping[K, Placement], group_text: Mapping[Hashable, float]
    ) -> dict[K, float]:
        texts = scale_to_best(group_text) if self.group_text_weight > 0 else {}
        scores = {
            key: value + self.group_text_weight * texts.get(placements[key].group, 0.0) if key in placements else value
            for key, value in scores.items()
        }
        if self.group_weight <= 0:
            return scores
        best: dict[Hashable, float] = {}
        for key, value in scores.items():
            place = placements.get(key)
            if place is not None and value > best.get(place.group, 0.0):
                best[place.group] = value
        top = max(best.values(), default=0.0)
        if top <= 0:
            return scores
        return {
            key: value + self.group_weight * best[placements[key].group] / top if key in placements else value
            for key, value in scores.items()
        }

    def rank(
        self,
        raw: Mapping[str, Mapping[K, float]],
        placements: Mapping[K, Placement] | None = None,
        *,
        group_text: Mapping[Hashable, float] | None = None,
        focus: Collection[K] = (),
        timely: Collection[K] = (),
        borrowers: Collection[K] = (),
    ) -> list[tuple[K, float]]:
        """Raw channel signals to ``(key, relevance)`` pairs, best first (ties: larger key first, i.e. the
        newer item for sequential ids); the keyword arguments are :meth:`relevance`'s."""
        scores = self.relevance(
            self.normalise(raw), placements, group_text=group_text, focus=focus, timely=timely, borrowers=borrowers
        )
        return sorted(scores.items(), key=lambda kv: (-kv[1], _neg(kv[0])))


def _neg(key: Hashable) -> object:
    # Sequential integer ids: newer first on ties; other keys keep a deterministic order.
    return -key if isinstance(key, int | float) else str(key)


def with_prior(relevance: float, prior: float, share: float) -> float:
    """``relevance`` scaled by a prior in [0, 1] (importance, recency) that may move it by ``share`` at most:
    the prior reorders near-ties but never lifts an item without relevance."""
    return relevance * ((1.0 - share) + share * min(max(prior, 0.0), 1.0))


def merge_ranked(
    lists: Sequence[Sequence[tuple[T, float]]], strengths: Sequence[float] | None = None
) -> list[tuple[T, float]]:
    """Lists each ranked by its own relevance (larger is better) as one list, best first.

    Every relevance is divided by its list's best, so each list's best item scores 1 and the rest keep
    their distance from it: relevances from separate rankings are not on one scale, but their ratios to
    their own best are. ``strengths`` (one per list, 1 when not given) then scale whole lists, where the
    caller has a measure the lists share of how good each one's best is. Each list keeps its own order (an
    item a ranking lifted above a better-scored one, such as the newer of two memories that disagree, stays
    above it: its score is capped by the one before it); ties go to the first list."""
    merged: list[tuple[float, int, int, T]] = []
    for which, ranked in enumerate(lists):
        strength = 1.0 if strengths is None else strengths[which]
        best = max((score for _, score in ranked), default=0.0)
        ceiling = 1.0
        for position, (item, score) in enumerate(ranked):
            ceiling = min(ceiling, score / best if best > 0 else 0.0)
            merged.append((strength * ceiling, which, position, item))
    merged.sort(key=lambda entry: (-entry[0], entry[1], entry[2]))
    return [(item, score) for score, _, _, item in merged]
