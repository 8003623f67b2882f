"""Deep recall's second stage: recall's best candidates read again by a local cross-encoder, within a deadline.

The first ranking (:func:`mnemo.recollection.recall_everything`) scores each candidate on its own; the
cross-encoder (:mod:`mnemo.embeddings.cross_encoder`) reads the query and a candidate together, which tells
an answer from a passage that only repeats the question's words. Its order is fused with the first one
(:func:`reranked`) rather than replacing it: the first ranking holds what only dates and names tie to a
question, which the cross-encoder misses. When the cross-encoder has not answered by the deadline, or its
model is still loading, the first ranking stands.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from .embeddings.cross_encoder import CrossEncoderMissing, shared_cross_encoder

log = logging.getLogger("mnemo.deep_recall")

POOL = 10
"""How many of the first ranking's best the cross-encoder reads: ``recall()``'s 8 and two more."""
# Chosen on LoCoMo dev conversations 1-2 and BEAM dev chats 1-3 (deadline lifted): reading the best 20 let the
# cross-encoder pull what only it liked into the 8 shown and lost evidence (LoCoMo recall() any 0.667 against
# 0.714 without deep recall); the best 10 kept it and put it first more often (0.294 of questions against 0.182).
TIMEOUT = 0.3
"""How long a deep recall may take, in seconds, before it keeps the first ranking: the cross-encoder gets what
the first ranking left of it."""
READ_CHARS = 240
"""The most of one archived message the cross-encoder reads: the window of the message that best matches
the query (recall shows half as much)."""
# 120, 240, 480 and 1,000 characters reached the same evidence within three questions on both sets; 240
# costs half what 480 does.
KEPT = "deep recall kept the first ranking: %s"
"""What is logged (at debug level, with the reason) each time deep recall keeps the first ranking."""
# Fusion: 1/(k + rank) from each ranking; a small k lets a confident cross-encoder move an item further. The
# cross-encoder's order alone lost evidence on both sets (LoCoMo recall() any 0.688 against 0.719 fused).
_K = 5

T = TypeVar("T")


def reranked(
    found: Sequence[T], query: str, deadline: float, read: Callable[[T], str], *, wait_for_model: bool = True
) -> list[T]:
    """``found`` (best first) with its first :data:`POOL` reordered by ``1/(k + rank) + 1/(k + rank by the
    cross-encoder)``, the cross-encoder reading ``read(item)`` beside ``query``. Unchanged when it has not
    answered by ``deadline`` (:func:`time.monotonic` seconds).

    ``wait_for_model`` loads the model first when it is not loaded yet (the deadline moves by the one-time
    load), raising :class:`CrossEncoderMissing` when it is not installed. Without it (per-turn recall, which
    never waits), a model not loaded yet leaves the order unchanged while it loads, and a missing one is
    logged once."""
    encoder = shared_cross_encoder()
    if wait_for_model and not encoder.loaded:
        loading = time.monotonic()
        encoder.load()  # before anything else: a missing model is refused even when there is nothing to reorder
        deadline += time.monotonic() - loading
    head = list(found[:POOL])
    left = deadline - time.monotonic()
    if len(head) < 2:
        return list(found)
    if left <= 0:  # no time left to score in: start no scoring that would hold up the next call
        log.debug(KEPT, "the first ranking took all the time")
        return list(found)
    try:
        scores = encoder.score_within(query, [read(item) for item in head], left)
    except CrossEncoderMissing as exc:  # only when not waiting: a waited-for load raised it above
        _tell_missing_once(exc)
        return list(found)
    if scores is None:
        log.debug(KEPT, "no scores by the deadline (late, an earlier scoring still running, or the model loading)")
        return list(found)
    by_encoder = sorted(range(len(head)), key=lambda index: -float(scores[index]))
    encoder_rank = {index: rank for rank, index in enumerate(by_encoder, 1)}
    fused = sorted(range(len(head)), key=lambda index: -(1 / (_K + index + 1) + 1 / (_K + encoder_rank[index])))
    return [head[index] for index in fused] + list(found[POOL:])


_told_missing = threading.Event()


def _tell_missing_once(exc: CrossEncoderMissing) -> None:
    if not _told_missing.is_set():
        _told_missing.set()
        log.warning("per-turn recall without its deep second stage: %s", exc)
