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
   (a session, or the memories written from one source).
3. **Group evidence.** Items in the group whose best item is most relevant get a small boost, so a
   session that clearly holds the answer contributes its other relevant turns too.

Importance/recency priors are applied last by :meth:`Fusion.with_prior`: they reorder near-ties and never
lift an item without relevance.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

FTS = "fts"
VECTOR = "vector"

# Measured on LoCoMo dev (bench/locomo.py, MiniLM-L6): full text carries more signal than the small model;
# 0.5-0.8 for vectors were within a point of each other, the lower one is the conservative choice.
CHANNEL_WEIGHTS: Mapping[str, float] = {FTS: 1.0, VECTOR: 0.5}
# Cosine below this is noise for a small sentence model, not a match.
VECTOR_FLOOR = 0.2
# Share of a neighbour's relevance an item borrows, by distance (1, 2) within its group.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (0.3, 0.1)
# How much of its group's best relevance (scaled to the best group) an item gains.
GROUP_WEIGHT = 0.2


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an item sits: its group (session, source) and its position in it (consecutive integers for
    consecutive items)."""

    group: Hashable
    position: int


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
    group_weight: float = GROUP_WEIGHT

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
    ) -> dict[K, float]:
        """One relevance per candidate from already normalised ``channels`` (see :meth:`normalise`), with
        context and group evidence when ``placements`` are given (candidates without one stand alone)."""
        base: dict[K, float] = {}
        for name, values in channels.items():
            weight = self.weights.get(name, 0.0)
            if weight <= 0:
                continue
            for key, value in values.items():
                if value > 0:
                    base[key] = base.get(key, 0.0) + weight * value
        if not placements or not base:
            return base
        return self._with_group(self._with_context(base, placements), placements)

    def _with_context(self, base: dict[K, float], placements: Mapping[K, Placement]) -> dict[K, float]:
        if not any(self.neighbours):
            return base
        at = {(p.group, p.position): key for key, p in placements.items() if key in base}
        smoothed = dict(base)
        for key, own in base.items():
            place = placements.get(key)
            if place is None:
                continue
            total = own
            for distance, share in enumerate(self.neighbours, start=1):
                for other in (place.position - distance, place.position + distance):
                    neighbour = at.get((place.group, other))
                    if neighbour is not None:
                        total += share * base[neighbour]
            smoothed[key] = total
        return smoothed

    def _with_group(self, scores: dict[K, float], placements: Mapping[K, Placement]) -> dict[K, float]:
        if self.group_weight <= 0:
            return scores
        best: dict[Hashable, float] = {}
        for key, value in scores.items():
            place = placements.get(key)
            if place is not None and value > best.get(place.group, 0.0):
                best[place.group] = value
        if not best:
            return scores
        top = max(best.values())
        boosted = dict(scores)
        for key, value in scores.items():
            place = placements.get(key)
            if place is not None:
                boosted[key] = value + self.group_weight * best[place.group] / top
        return boosted

    def rank(
        self,
        raw: Mapping[str, Mapping[K, float]],
        placements: Mapping[K, Placement] | None = None,
    ) -> list[tuple[K, float]]:
        """Raw channel signals to ``(key, relevance)`` pairs, best first (ties: larger key first, i.e. the
        newer item for sequential ids)."""
        scores = self.relevance(self.normalise(raw), placements)
        return sorted(scores.items(), key=lambda kv: (-kv[1], _neg(kv[0])))


def _neg(key: Hashable) -> object:
    # Sequential integer ids: newer first on ties; other keys keep a deterministic order.
    return -key if isinstance(key, int | float) else str(key)


def with_prior(relevance: float, prior: float, share: float) -> float:
    """``relevance`` scaled by a prior in [0, 1] (importance, recency) that may move it by ``share`` at most:
    the prior reorders near-ties but never lifts an item without relevance."""
    return relevance * ((1.0 - share) + share * min(max(prior, 0.0), 1.0))
