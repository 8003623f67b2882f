"""The learned layer of the threat scan: a linear model over hashed word and character n-grams.

Patterns catch the phrasings someone thought of; the classifier catches the rest of what injections have in
common (the second person aimed at the model, talk of rules, restrictions, personas, answers and prompts,
commands to embed code). It has to run on every memory write, thousands a second, so it is a logistic
regression over feature hashing: word unigrams and bigrams and character 4-grams of the folded,
lower-cased text, hashed into :data:`FEATURE_BITS` bits with a sign bit; each distinct feature present counts
once, scaled by one over the square root of the number of distinct features (a unit vector). Hashing is done
with numpy on the code points, so a 2,200-character note costs well under a millisecond.

The weights (``scan_weights.npz`` beside this module) are trained by ``scripts/train_scan.py`` and stored as
16-bit integers with one scale, so the score is an exact integer sum followed by a few IEEE operations:
the same text gets the same score on every machine. They are loaded once per process, on first use.
"""

from __future__ import annotations

import math
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .findings import CLASSIFIER_RULE, EXCERPT_CHARS, PROMPT_INJECTION, Finding, excerpt
from .normalize import View, fold

__all__ = [
    "FEATURE_BITS", "WEIGHTS_FILE", "Model", "feature_indices", "features_of_many", "injection_probability", "load_model",
]

FEATURE_BITS = 18
"""Features are hashed into ``2**FEATURE_BITS`` slots."""

WEIGHTS_FILE = "scan_weights.npz"
"""Name of the package data file holding the trained weights."""

_CHAR_NGRAM = 4
_WORD = re.compile(r"[^\W\d_]+|\d+")
# Every ASCII character that is neither a letter nor a digit, as a space.
_ASCII_SEPARATORS = str.maketrans({code: " " for code in range(128) if not chr(code).isalnum()})
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_ROLL = np.uint64(1_000_003)
_SHIFT = np.uint64(64 - FEATURE_BITS)
_SIGN_SHIFT = np.uint64(63)
# Each kind of feature hashes with its own offset, so the word "the" and the trigram "the" differ.
_SEEDS = {"word": np.uint64(11), "pair": np.uint64(23), "chars": np.uint64(41)}
# A feature's key is its slot and sign bit; the text it belongs to goes above them when a batch is sorted.
_KEY_BITS = np.uint64(FEATURE_BITS + 1)
_KEY_MASK = np.uint64((1 << (FEATURE_BITS + 1)) - 1)


def feature_indices(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The hashed features of ``text``: distinct slot indices and their signs (+1/-1).

    The text is folded (see :func:`mnemo.safety.normalize.fold`), lower-cased and its whitespace collapsed.
    Every kind of feature is offset by its own seed before one shared mixing step, so the word "the" and the
    trigram "the" land in different slots.
    """
    _, slots, signs = features_of_many([text])
    return slots, signs


def _words(text: str) -> list[str]:
    """The runs of letters and the runs of digits of ``text``, as ``_WORD.findall`` gives them; for ASCII text
    (most notes) by translating and splitting, two to three times faster than the regex."""
    if not text.isascii():
        return _WORD.findall(text)
    tokens = text.translate(_ASCII_SEPARATORS).split()
    # Letters and digits run together ("sha256", "3pm") are split as the pattern splits them.
    mixed = [index for index, token in enumerate(tokens) if not (token.isalpha() or token.isdigit())]
    words: list[str] = []
    plain = 0
    for index in mixed:
        words += tokens[plain:index]
        words += _WORD.findall(tokens[index])
        plain = index + 1
    return words + tokens[plain:]


def features_of_many(texts: Sequence[str], *, folded: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hashed features of every text at once, as :func:`feature_indices` gives them one by one:
    ``(owner, slots, signs)``, where ``owner`` is the index of the text each feature belongs to (ascending,
    slots ascending within a text). A batch costs a few array operations in all rather than per text.

    ``folded`` says the texts are already :func:`~mnemo.safety.normalize.fold`'s output (the scan's readings
    are), so they are not folded again: the same features, since folding twice changes nothing."""
    # str.split() breaks at exactly the characters ``\s`` matches.
    cleaned = [" ".join((text if folded else fold(text)).lower().split()) for text in texts]
    # One text needs no bookkeeping of whose feature is whose (the common case: every write scans one).
    several = len(texts) > 1
    hashes: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    words = [_words(text) for text in cleaned]
    if any(words):
        word_hashes = np.array(
            [zlib.crc32(word.encode("utf-8", "surrogatepass")) for each in words for word in each], dtype=np.uint64
        )
        pairs = word_hashes[:-1] * _ROLL + word_hashes[1:] + _SEEDS["pair"]
        if several:
            word_owner = np.repeat(np.arange(len(texts)), [len(each) for each in words])
            within = word_owner[:-1] == word_owner[1:]  # a pair never spans two texts
            pairs = pairs[within]
            owners += [word_owner, word_owner[:-1][within]]
        hashes += [word_hashes + _SEEDS["word"], pairs]
    padded = [f" {text} " for text in cleaned]
    points = np.frombuffer("".join(padded).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    if len(points) >= _CHAR_NGRAM:
        rolling = points[: len(points) - _CHAR_NGRAM + 1]
        for offset in range(1, _CHAR_NGRAM):
            rolling = rolling * _ROLL + points[offset : len(points) - _CHAR_NGRAM + 1 + offset]
        if several:
            # An n-gram counts only if it ends inside the text it starts in.
            point_owner = np.repeat(np.arange(len(texts)), [len(text) for text in padded])
            start_owner = point_owner[: len(rolling)]
            within = start_owner == point_owner[_CHAR_NGRAM - 1 :]
            rolling = rolling[within]
            owners.append(start_owner[within])
        hashes.append(rolling + _SEEDS["chars"])
    if not hashes or not sum(map(len, hashes)):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    mixed = np.concatenate(hashes) * _MULTIPLIER
    keys = ((mixed >> _SHIFT) << np.uint64(1)) | (mixed >> _SIGN_SHIFT)
    # Presence, not counts: a word repeated a thousand times must not outweigh everything else. One sort of
    # (text, key) drops the repeats of every text at once.
    if several:
        keys = (np.concatenate(owners).astype(np.uint64) << _KEY_BITS) | keys
    keys = np.sort(keys)
    if len(keys) > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    owner = (keys >> _KEY_BITS).astype(np.int64) if several else np.zeros(len(keys), dtype=np.int64)
    slots = ((keys & _KEY_MASK) >> np.uint64(1)).astype(np.int64)
    signs = (keys & np.uint64(1)).astype(np.int64) * 2 - 1
    return owner, slots, signs


@dataclass(frozen=True)
class Model:
    """Trained weights: ``weights[slot] * scale`` is a feature's weight, ``bias`` the intercept."""

    weights: np.ndarray
    scale: float
    bias: float

    def logits(self, texts: Sequence[str], *, folded: bool = False) -> np.ndarray:
        """The model's log-odds that each of ``texts`` is an injection, computed for the batch at once
        (``folded``: see :func:`features_of_many`)."""
        owner, slots, signs = features_of_many(texts, folded=folded)
        # Integer sums, exact in float64 (|sum| < 2**53), so the batch gives each text the bits it gets alone.
        totals = np.bincount(owner, weights=self.weights[slots] * signs, minlength=len(texts))
        # A text without features has a total of 0 and scores the bias alone.
        counts = np.maximum(np.bincount(owner, minlength=len(texts)), 1)
        return totals * self.scale / np.sqrt(counts) + self.bias

    def logit(self, text: str) -> float:
        """The model's log-odds that ``text`` is an injection."""
        return float(self.logits([text])[0])

    def probabilities(self, texts: Sequence[str], *, folded: bool = False) -> list[float]:
        """The model's probability, in [0, 1], that each of ``texts`` is an injection (``folded``: see
        :func:`features_of_many`)."""
        return [_probability(float(logit)) for logit in self.logits(texts, folded=folded)]

    def probability(self, text: str) -> float:
        """The model's probability, in [0, 1], that ``text`` is an injection."""
        return _probability(self.logit(text))


def _probability(logit: float) -> float:
    # math.exp, not numpy's: numpy picks an exp for the CPU it runs on, and the score must not depend on it.
    if logit < -700.0:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


_model: Model | None = None
_model_lock = threading.Lock()


def load_model() -> Model:
    """The shipped model, read from the package data on first call and kept for the process."""
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                # A path beside the module, not importlib.resources: importing that costs every process ~15 ms.
                with (Path(__file__).parent / WEIGHTS_FILE).open("rb") as handle:
                    data = np.load(handle, allow_pickle=False)
                    weights = np.ascontiguousarray(data["weights"], dtype=np.int16)
                    if weights.shape != (1 << FEATURE_BITS,):
                        expected = 1 << FEATURE_BITS
                        raise RuntimeError(f"{WEIGHTS_FILE} holds {weights.shape} weights, expected {expected}")
                    _model = Model(weights, float(data["scale"]), float(data["bias"]))
    return _model


def injection_probability(text: str) -> float:
    """Probability, in [0, 1], that ``text`` tries to instruct the model that reads it (the shipped model)."""
    return load_model().probability(text)


def best_readings(batch: Sequence[list[View]], model: Model) -> list[tuple[float, View]]:
    """For each text's readings, the highest probability ``model`` gives any of them, and that reading; every
    reading of the batch is scored in one pass.

    rot13 is left to the patterns: the classifier was never trained on rotated text.
    """
    scored = [
        (index, reading) for index, readings in enumerate(batch) for reading in readings if reading.via != "rot13"
    ]
    best = [(0.0, readings[0]) for readings in batch]
    for (index, reading), probability in zip(
        scored, model.probabilities([reading.text for _, reading in scored], folded=True), strict=True
    ):
        if probability > best[index][0]:
            best[index] = (probability, reading)
    return best


def classifier_finding(probability: float, reading: View, threshold: float) -> Finding | None:
    """A finding for the classifier's best reading of a text, if its score reaches ``threshold``."""
    if probability < threshold:
        return None
    snippet = excerpt(reading.text, 0, min(len(reading.text), EXCERPT_CHARS))
    return Finding(PROMPT_INJECTION, CLASSIFIER_RULE, snippet, "classifier", reading.via, round(probability, 4))

