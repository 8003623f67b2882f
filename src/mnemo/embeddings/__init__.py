"""Local sentence embeddings and nearest-neighbour search for mnemo's retrieval.

:class:`MiniLMEmbedder` is the default, fully offline :class:`Embedder` (a :class:`QueryEmbedder`: queries take a
quicker path); :class:`BruteForceIndex` is the exact :class:`VectorIndex` the stores feed with the vectors they
persist.
"""

from pathlib import Path

from mnemo.embeddings.index import BruteForceIndex, VectorIndex
from mnemo.embeddings.minilm import MiniLMEmbedder
from mnemo.embeddings.protocol import Embedder, QueryEmbedder
from mnemo.errors import InvalidArgument

EMBEDDER_NAMES = ("minilm", "none")


def named_embedder(name: str, *, cache_dir: str | Path | None = None) -> Embedder | None:
    """The embedder a setting names: ``"minilm"`` (local, loaded on first use, its derived weights cached in
    ``cache_dir``; see :class:`MiniLMEmbedder`) or ``"none"``."""
    if name == "minilm":
        return MiniLMEmbedder(cache_dir=cache_dir)
    if name == "none":
        return None
    raise InvalidArgument("embedder", f"must be one of {', '.join(EMBEDDER_NAMES)}, got {name!r}")


def preload(embedder: Embedder | None) -> None:
    """Start loading ``embedder``'s model in the background if it can (see :meth:`MiniLMEmbedder.preload`);
    embedders without a ``preload`` method (and ``None``) are left as they are."""
    start = getattr(embedder, "preload", None)
    if callable(start):
        start()


__all__ = [
    "EMBEDDER_NAMES",
    "BruteForceIndex",
    "Embedder",
    "MiniLMEmbedder",
    "QueryEmbedder",
    "VectorIndex",
    "named_embedder",
    "preload",
]
