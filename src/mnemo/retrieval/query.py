"""Turning whatever a model or a person types into a safe SQLite FTS5 query.

FTS5's query language is small but unforgiving: a stray quote, a dangling ``AND``, a column filter
or a bare ``-`` is a syntax error. Search boxes and LLM tool calls produce all of those, so nothing
typed ever reaches ``MATCH`` verbatim: :func:`parse_query` rebuilds the query from quoted terms and
phrases, keeping only the operators that make sense (``AND``/``OR``/``NOT`` between two terms, a
trailing ``*`` for a prefix). Every term is emitted as a double-quoted FTS5 string made of word
characters, so the result is always valid for both the ``unicode61`` and ``trigram`` tokenizers.

The same module extracts the *meaningful* terms of a natural-language question (stop words dropped)
for the ranked OR fallback, and detects CJK text, which needs the trigram index. The session archive
and the memory graph share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_QUERY_CHARS = 512
MAX_TERMS = 32

# Words that carry no topic in an English question or statement. Dropping them turns
# "what did Caroline say about the adoption agency?" into caroline, adoption, agency.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all almost also am an and any anything are aren around as at
    be became because been before being below between both but by can cannot could couldn did didn
    do does doesn doing don done down during each else ever every few for from further get gets got
    had hadn has hasn have haven having he her here hers herself him himself his how however i if in
    into is isn it its itself just kind know let like ll made make many may maybe me might mine more
    most much must my myself near need no nor not now of off often on once one only or other others
    our ours ourselves out over own per please quite rather re really s said same say says see shall
    she should shouldn since so some something sometimes still such t tell than that the their theirs
    them themselves then there these they thing things this those though through thus to too toward
    towards under until up upon us ve very via want was wasn way we well went were weren what whatever
    when whenever where whether which while who whom whose why will with within without won would
    wouldn yes yet you your yours yourself yourselves d m o y
    """.split()
)

_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002ffff"
)
_CJK_RE = re.compile(f"[{_CJK}]")

# A word is a run of letters/digits/underscore; -, ., _, ', / and @ join words into one compound
# term (docker-compose, P2.2, my_app.config.ts, user@host) that is searched as a phrase.
_WORD = r"[^\W_]+(?:[-._'/@+:]*[^\W_]+)*|_+[^\W_]+(?:[-._'/@+:]*[^\W_]+)*"
_TOKEN_RE = re.compile(rf'(?P<quote>")|(?P<word>{_WORD})(?P<star>\*)?|(?P<other>.)', re.DOTALL)
_PIECE_RE = re.compile(r"[^\W_]+", re.UNICODE)
_OPERATORS = frozenset({"AND", "OR", "NOT"})


@dataclass(frozen=True)
class ParsedQuery:
    """A user query made safe.

    ``strict`` is the FTS5 query to try first (implicit AND, user operators kept); ``terms`` are the
    meaningful terms for the ranked OR fallback; ``explicit`` says the user wrote AND/OR/NOT between
    terms, in which case no fallback should loosen what they asked for. (A quoted phrase is not
    explicit: questions quote titles and names, and should still find the turns that mention them.)
    ``phrases`` are the quoted FTS5 strings ``strict`` is made of; ``pieces`` the raw words typed
    (what the trigram index and substring scans need).
    """

    strict: str
    terms: tuple[str, ...] = ()
    explicit: bool = False
    cjk: bool = False
    pieces: tuple[str, ...] = field(default=(), repr=False)
    phrases: tuple[str, ...] = field(default=(), repr=False)

    @property
    def empty(self) -> bool:
        """True when nothing searchable is left."""
        return not self.strict


def has_cjk(text: str) -> bool:
    """Whether ``text`` contains Chinese, Japanese or Korean characters."""
    return _CJK_RE.search(text) is not None


def _clean(text: object, max_chars: int) -> str:
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    # Lone surrogates cannot be encoded for SQLite; drop them rather than fail.
    text = text.encode("utf-8", "ignore").decode("utf-8")
    return text[:max_chars]


def quote(text: str) -> str:
    """``text`` as one FTS5 string (a phrase when it holds several words)."""
    return '"' + " ".join(_PIECE_RE.findall(text)).replace('"', '""') + '"'


def _phrase(words: list[str]) -> str | None:
    pieces = [p for w in words for p in _PIECE_RE.findall(w)]
    return ('"' + " ".join(pieces) + '"') if pieces else None


def parse_query(text: object, *, max_chars: int = MAX_QUERY_CHARS, max_terms: int = MAX_TERMS) -> ParsedQuery:
    """Parse anything into a :class:`ParsedQuery`; never raises."""
    cleaned = _clean(text, max_chars)
    items: list[tuple[str, str]] = []  # ("term", fts) or ("op", name)
    words_seen: list[str] = []
    tokens = list(_TOKEN_RE.finditer(cleaned))
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.group("quote"):
            closing = next((j for j in range(index, len(tokens)) if tokens[j].group("quote")), None)
            if closing is None:
                continue  # an unbalanced quote is dropped; the words after it stay ordinary terms
            words = [t.group("word") for t in tokens[index:closing] if t.group("word")]
            index = closing + 1
            phrase = _phrase(words)
            if phrase:
                star = index < len(tokens) and tokens[index].group("other") == "*"
                if star:
                    index += 1
                items.append(("term", phrase + ("*" if star else "")))
                words_seen.extend(words)
            continue
        word = token.group("word")
        if not word:
            continue
        if word in _OPERATORS:
            items.append(("op", word))
            continue
        fts = quote(word)
        if fts == '""':
            continue
        items.append(("term", fts + ("*" if token.group("star") else "")))
        words_seen.append(word)

    parts: list[str] = []
    phrases: list[str] = []
    explicit = False
    pending: str | None = None
    term_count = 0
    for kind, value in items:
        if kind == "op":
            if parts and pending is None:
                pending = value  # a run of operators keeps the first; a leading one is dropped
            continue
        if term_count >= max_terms:
            break
        if pending is not None:
            parts.append(pending)
            explicit = True
            pending = None
        parts.append(value)
        phrases.append(value)
        term_count += 1
    strict = " ".join(parts)
    return ParsedQuery(
        strict=strict,
        terms=tuple(meaningful_terms(" ".join(words_seen), max_terms=max_terms)),
        explicit=explicit,
        cjk=has_cjk(strict),
        pieces=tuple(words_seen),
        phrases=tuple(phrases),
    )


def sanitize(text: object, *, max_chars: int = MAX_QUERY_CHARS) -> str:
    """A valid FTS5 query for ``text``, or ``""`` when nothing searchable is left. Never raises."""
    return parse_query(text, max_chars=max_chars).strict


def meaningful_terms(text: object, *, max_terms: int = MAX_TERMS) -> list[str]:
    """The topic-bearing words of ``text``, lower-cased, in order, without duplicates or stop words.

    Possessives are stripped (``Caroline's`` -> ``caroline``) and compounds stay whole
    (``docker-compose``); single letters are dropped unless they are CJK characters or digits.
    """
    cleaned = _clean(text, MAX_QUERY_CHARS)
    seen: dict[str, None] = {}
    for match in re.finditer(_WORD, cleaned):
        word = match.group(0).lower()
        if word.endswith(("'s", "\u2019s")):
            word = word[:-2]
        word = word.strip("-._'/@+:")
        if not word or word in STOP_WORDS:
            continue
        if len(word) == 1 and not (word.isdigit() or has_cjk(word)):
            continue
        seen.setdefault(word, None)
        if len(seen) >= max_terms:
            break
    return list(seen)


def term_phrases(terms: list[str] | tuple[str, ...]) -> list[str]:
    """``terms`` as distinct quoted FTS5 strings (empty ones dropped)."""
    return list(dict.fromkeys(q for q in (quote(t) for t in terms) if q != '""'))


def or_query(terms: list[str] | tuple[str, ...]) -> str:
    """A ranked-OR FTS5 query over ``terms`` (each quoted), or ``""``."""
    return " OR ".join(term_phrases(terms))


def cjk_ngrams(term: str, n: int = 3) -> list[str]:
    """Overlapping ``n``-character pieces of a CJK ``term`` (the term itself when shorter)."""
    if len(term) <= n:
        return [term]
    return [term[i : i + n] for i in range(len(term) - n + 1)]
