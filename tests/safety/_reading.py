"""How a reader takes a text: the independent oracle the fence and scrubber tests check against.

It folds the whole text the obvious way (decode character references, NFKD, drop accents and invisible
characters, lower-case, read look-alikes as their letters, collapse white space) and then looks for the
fence tag and the system note with plain regular expressions. The library folds differently (one slot
per character, so cuts map back to the text); agreeing with this oracle is what the tests require.
"""

from __future__ import annotations

import html
import re
import unicodedata

from mnemo.safety import MEMORY_CONTEXT_NOTE
from mnemo.safety.confusables import CONFUSABLES

_INVISIBLE = {"Cf", "Cc", "Mn", "Me", "Cs", "Co", "Cn"}
FENCE_TAG = re.compile(r"<[ /]*memory ?(?:- ?)?context(?![\w-])")


def read(text: str) -> str:
    """``text`` as a reader takes it."""
    decoded = unicodedata.normalize("NFKD", html.unescape(text))
    kept = []
    for char in decoded:
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char) not in _INVISIBLE:
            lowered = char.lower()
            kept.append(CONFUSABLES.get(lowered, lowered))
    return re.sub(" +", " ", "".join(kept).replace("_", "-"))


def fence_tags(text: str) -> list[int]:
    """Where, in the read text, something a reader takes for a fence tag starts."""
    return [match.start() for match in FENCE_TAG.finditer(read(text))]


def note_copies(text: str) -> int:
    """How many copies of the system note a reader sees in ``text``."""
    return read(text).count(read(MEMORY_CONTEXT_NOTE))
