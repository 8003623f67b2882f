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
from collections.abc import Sequence
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
# Compiled phrases a process keeps per table, and how long what it reads about a table stays fresh.
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


def compile_tsquery(executor: Any, fts_query: str, known: dict[tuple[str, str], str] | None = None) -> str:
    """``fts_query`` as ``tsquery`` text; ``""`` when nothing in it is searchable (see :func:`compile_tsqueries`)."""
    return compile_tsqueries(executor, [fts_query], known)[0]


def compile_tsqueries(
    executor: Any, fts_queries: Sequence[str], known: dict[tuple[str, str], str] | None = None
) -> list[str]:
    """Each of ``fts_queries`` as ``tsquery`` text (``""`` when nothing in it is searchable).

    Each phrase is compiled by PostgreSQL (its stemmer is the truth) and each query is put together here from
    the pieces with tsquery's own operators, so ``known`` (phrase to compiled text, filled in as a side
    effect) spares the round trip for phrases compiled before, and the unknown ones of all the queries share
    one."""
    known = {} if known is None else known
    parsed = [_parse(fts_query) for fts_query in fts_queries]
    missing = list(dict.fromkeys(
        piece for alternatives in parsed for group in alternatives for piece, _ in group if piece not in known
    ))  # fmt: skip
    if missing:
        row = executor.execute(
            "SELECT " + ", ".join(f"CAST({function}(CAST(? AS regconfig), ?) AS text)" for function, _ in missing),
            [value for _, text in missing for value in (CONFIG, text)],
        ).fetchone()
        known.update(zip(missing, (text or "" for text in row), strict=True))
    return [_compose(alternatives, known) for alternatives in parsed]


_Alternatives = list[list[tuple[tuple[str, str], bool]]]


def _parse(fts_query: str) -> _Alternatives:
    """An OR of ANDs of (phrase, negated), each phrase as the function that compiles it and its argument."""
    alternatives: _Alternatives = [[]]
    operator = None
    for phrase, star, word in _TOKEN.findall(fts_query):
        if word:
            operator = word
            continue
        words = _WORD.findall(phrase.replace('""', '"'))
        if not words:
            continue
        piece = ("to_tsquery", " <-> ".join(words) + ":*") if star else ("phraseto_tsquery", " ".join(words))
        if operator == "OR" and alternatives[-1]:
            alternatives.append([])
        alternatives[-1].append((piece, operator == "NOT" and bool(alternatives[-1])))
        operator = None
    return alternatives


def _compose(alternatives: _Alternatives, known: dict[tuple[str, str], str]) -> str:
    # A phrase of stop words alone compiles to nothing and drops out, as PostgreSQL's && and || drop an
    # empty operand. A lone word stays bare ('word'), the form the column statistics are looked up by.
    kept = [[(known[piece], negated) for piece, negated in group if known[piece]] for group in alternatives]
    kept = [group for group in kept if group]
    if len(kept) == 1 and len(kept[0]) == 1 and not kept[0][0][1]:
        return kept[0][0][0]
    return " | ".join(
        " & ".join(("!" if negated else "") + _operand(compiled) for compiled, negated in group) for group in kept
    )


def _operand(compiled: str) -> str:
    # ! binds tighter than <->, which binds tighter than & and |: a phrase goes in parentheses.
    return compiled if _LEXEME.fullmatch(compiled) else f"( {compiled} )"


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
        self._compiled: dict[tuple[str, str], str] = {}
        self._common: dict[str, float] = {}
        self._average = 1.0
        self._read = -math.inf

    def tsquery(self, executor: Any, expression: str) -> str:
        """:func:`compile_tsquery` of ``expression``, each phrase compiled once per process."""
        return self.tsqueries(executor, [expression])[0]

    def tsqueries(self, executor: Any, expressions: Sequence[str]) -> list[str]:
        """:func:`compile_tsqueries` of ``expressions``, each phrase compiled once per process."""
        if len(self._compiled) >= _COMPILED_KEPT:
            self._compiled.clear()
        return compile_tsqueries(executor, expressions, self._compiled)

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
