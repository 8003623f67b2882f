"""Full text on PostgreSQL, shared by the archive and the graph: mnemo's text-search configuration, FTS5-syntax
queries compiled to ``tsquery``, and the unit BM25 counts term frequencies in.

The configuration is English Snowball stemming *without* a stop-word list, like SQLite's porter tokenizer,
so a query's every word counts the same on both engines (PostgreSQL's stock ``english`` drops "what", "did",
"they", which turns a strict AND of a question into a loose one).

mnemo's parsed queries are FTS5-syntax strings of quoted phrases and ``AND`` / ``OR`` / ``NOT``
(:func:`mnemo.retrieval.parse_query`); each phrase becomes ``phraseto_tsquery`` (or ``to_tsquery`` with ``:*``
for a prefix), combined with FTS5's precedence (``NOT`` binds tighter than ``AND``, ``AND`` tighter than
``OR``), so the words a user types only ever reach PostgreSQL as parameters.
"""

from __future__ import annotations

import math
import re
from typing import Any

CONFIG = "mnemo.english"
"""The text-search configuration every ``tsvector`` and ``tsquery`` of mnemo's is made in."""

# BM25's constants (FTS5's too) and ts_rank's value for one occurrence of a word of weight A, without
# normalisation: the unit a term frequency is counted in.
K1 = 1.2
B = 0.75
ONE_OCCURRENCE = 0.6079271

_TOKEN = re.compile(r'"((?:[^"]|"")*)"(\*?)|\b(AND|OR|NOT)\b')
_WORD = re.compile(r"[^\W_]+")


def ensure_configuration(executor: Any) -> None:
    """Create mnemo's text-search configuration unless it exists (a migration step of each component that
    indexes text, so whichever migrates first makes it)."""
    exists = executor.execute(
        "SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace"
        " WHERE n.nspname = 'mnemo' AND c.cfgname = 'english'"
    ).fetchone()
    if exists:
        return
    executor.execute("CREATE TEXT SEARCH DICTIONARY mnemo.english_stem (TEMPLATE = snowball, Language = english)")
    executor.execute(f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = pg_catalog.english)")
    executor.execute(
        f"ALTER TEXT SEARCH CONFIGURATION {CONFIG}"
        " ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH mnemo.english_stem"
    )


def phrases(fts_query: str) -> list[str]:
    """The quoted phrases of an FTS5-syntax query, as written (``"word"`` or ``"word"*``), operators left out."""
    return [f'"{phrase}"{star}' for phrase, star, word in _TOKEN.findall(fts_query) if not word]


def compile_tsquery(executor: Any, fts_query: str) -> str:
    """``fts_query`` as ``tsquery`` text; ``""`` when nothing in it is searchable."""
    alternatives: list[list[tuple[str, bool]]] = [[]]  # OR of ANDs of (phrase expression, negated)
    params: list[object] = []
    operator = None
    for phrase, star, word in _TOKEN.findall(fts_query):
        if word:
            operator = word
            continue
        words = _WORD.findall(phrase.replace('""', '"'))
        if not words:
            continue
        if star:
            expression = "to_tsquery(CAST(? AS regconfig), ?)"
            params += [CONFIG, " <-> ".join(words) + ":*"]
        else:
            expression = "phraseto_tsquery(CAST(? AS regconfig), ?)"
            params += [CONFIG, " ".join(words)]
        if operator == "OR" and alternatives[-1]:
            alternatives.append([])
        alternatives[-1].append((expression, operator == "NOT" and bool(alternatives[-1])))
        operator = None
    groups = [
        "(" + " && ".join(f"!!({e})" if negated else f"({e})" for e, negated in group) + ")"
        for group in alternatives
        if group
    ]
    if not groups:
        return ""
    return executor.execute(f"SELECT CAST({' || '.join(groups)} AS text)", params).fetchone()[0] or ""


def bm25_idf(documents: int, matches: float) -> float:
    """Okapi BM25's inverse document frequency, floored just above zero as FTS5 floors it. ``matches`` may
    come from a later snapshot or an estimate, so it is capped at ``documents``."""
    matches = min(matches, documents)
    return max(1e-6, math.log((documents - matches + 0.5) / (matches + 0.5)))
