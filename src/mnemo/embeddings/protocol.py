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


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An :class:`Embedder` with a quicker way to embed a search query.

    A query's vector is compared with stored ones and then thrown away, so it may be computed with less
    precision than stored vectors (never another model): mnemo embeds the queries of an embedder that has
    this method through it, and everything it stores through :meth:`embed`.
    """

    def embed_query(self, text: str) -> np.ndarray:
        """The ``(dim,)`` float32 unit vector of the query ``text``, close to ``embed([text])[0]``."""
        ...
