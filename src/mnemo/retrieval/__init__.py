"""The retrieval engine shared by the session archive and the memory graph: safe FTS5 queries,
natural-language term extraction, CJK detection, and the hybrid ranking (:class:`Fusion`)."""

from .bm25 import bm25_idf
from .fusion import Fusion, Placement, asks_question, merge_ranked, scale_similarity, scale_to_best, with_prior
from .query import (
    MAX_QUERY_CHARS,
    STOP_WORDS,
    ParsedQuery,
    cjk_ngrams,
    has_cjk,
    meaningful_terms,
    or_query,
    parse_query,
    quote,
    sanitize,
    term_phrases,
)

__all__ = [
    "MAX_QUERY_CHARS",
    "STOP_WORDS",
    "Fusion",
    "ParsedQuery",
    "Placement",
    "asks_question",
    "bm25_idf",
    "cjk_ngrams",
    "has_cjk",
    "meaningful_terms",
    "merge_ranked",
    "or_query",
    "parse_query",
    "quote",
    "sanitize",
    "scale_similarity",
    "scale_to_best",
    "term_phrases",
    "with_prior",
]
