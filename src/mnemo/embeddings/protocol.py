"""The contract every sentence-embedding model fulfils."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors whose dot product is their cosine similarity.

    ``name`` identifies the model (and its numeric variant) and is stored beside every vector, so vectors of
    different models are never compared: a store that finds another name re-embeds. ``dim`` is the vector
    length. Implementations batch internally and are safe to call from several threads.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a C-contiguous float32 array of shape ``(len(texts), dim)`` with L2-normalised rows.

        An empty sequence gives shape ``(0, dim)``. Row ``i`` belongs to ``texts[i]``.
        """
        ...
