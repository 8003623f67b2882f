"""Which of a store's names (memory subjects, chat participants) a query mentions.

Both stores boost what belongs to someone the query names ("What did Caroline say about …"). A name
matches as a whole word sequence, ignoring case, Unicode composition and how the query spaces it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"\w+")


def name_key(text: str) -> str:
    """A name in the one form it is stored and matched in: NFC, runs of whitespace as one space, none
    around it."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def names_mentioned(query: str, names: Iterable[str]) -> set[str]:
    """Those of ``names`` that ``query`` mentions ("caroline's" mentions Caroline; "Carolinesque" does not)."""
    folded = name_key(query).casefold()
    words = set(_WORD.findall(folded))
    found = set()
    for name in names:
        key = name_key(name).casefold()
        first = _WORD.search(key)
        # Cheap test first: most names share no word with the query.
        if first is not None and first.group() in words and re.search(rf"(?<!\w){re.escape(key)}(?!\w)", folded):
            found.add(name)
    return found
