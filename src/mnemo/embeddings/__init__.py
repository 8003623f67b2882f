"""Local sentence embeddings and nearest-neighbour search for mnemo's retrieval.

:class:`MiniLMEmbedder` is the default, fully offline :class:`Embedder`; :class:`BruteForceIndex` is the
exact :class:`VectorIndex` the stores feed with the vectors they persist.
"""

from mnemo.embeddings.index import BruteForceIndex, VectorIndex
from mnemo.embeddings.minilm import MiniLMEmbedder
from mnemo.embeddings.protocol import Embedder

__all__ = ["BruteForceIndex", "Embedder", "MiniLMEmbedder", "VectorIndex"]
