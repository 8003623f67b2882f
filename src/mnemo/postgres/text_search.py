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
import time
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
_LEXEME = re.compile(r"'([^']+)'")
# Compiled queries a process keeps per table, and how long what it reads about a table stays fresh.
_COMPILED_KEPT = 1024
_REFRESH_SECONDS = 60.0
# Rows whose lengths give the average a row's length is compared with.
_LENGTH_SAMPLE = 1000


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


class TermStatistics:
    """What a process keeps between queries about one table's ``search`` column: compiled queries, the share
    of rows holding each of the commonest words, and the average length of recent rows. The shares come from
    the statistics ANALYZE keeps for the planner (``pg_stats.most_common_elems``: on a sample, for the ~1,000
    commonest words; empty until the table has been analysed), so knowing that a word is common costs no
    walk of its matches. Shares and lengths change slowly and are re-read once a minute; a caller turns a
    share into a count with the table's size as it is now, which changes fast."""

    def __init__(self, table: str, order: str) -> None:
        """``table`` has a ``tsvector`` column ``search``; ``order`` is its column that grows with each row."""
        self._table, self._order = table, order
        self._compiled: dict[str, str] = {}
        self._common: dict[str, float] = {}
        self._average = 1.0
        self._read = -math.inf

    def tsquery(self, executor: Any, expression: str) -> str:
        """:func:`compile_tsquery` of ``expression``, compiled once per process."""
        found = self._compiled.get(expression)
        if found is None:
            found = compile_tsquery(executor, expression)
            if len(self._compiled) >= _COMPILED_KEPT:
                self._compiled.clear()
            self._compiled[expression] = found
        return found

    def share(self, executor: Any, tsquery: str) -> float | None:
        """About which fraction of rows hold ``tsquery`` when it is one of the table's commonest words, else
        ``None``."""
        word = _LEXEME.fullmatch(tsquery)
        return None if word is None else self._fresh(executor)[0].get(word.group(1))

    def average_length(self, executor: Any) -> float:
        """The average length (distinct words) of the newest rows."""
        return self._fresh(executor)[1]

    def _fresh(self, executor: Any) -> tuple[dict[str, float], float]:
        now = time.monotonic()
        if now - self._read >= _REFRESH_SECONDS:
            row = executor.execute(
                "SELECT CAST(CAST(most_common_elems AS text) AS text[]), most_common_elem_freqs FROM pg_stats"
                " WHERE schemaname = current_schema() AND tablename = ? AND attname = 'search'",
                (self._table,),
            ).fetchone()
            common: dict[str, float] = {}
            if row is not None and row[0] and row[1]:
                common = dict(zip(row[0], map(float, row[1]), strict=False))
            average = executor.execute(
                f"SELECT avg(length(search)) FROM (SELECT search FROM {self._table}"
                f" ORDER BY {self._order} DESC LIMIT {_LENGTH_SAMPLE}) AS recent"
            ).fetchone()[0]
            self._common, self._average, self._read = common, max(1.0, float(average or 1.0)), now
        return self._common, self._average
