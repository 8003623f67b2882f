"""The folded view of a text: what a reader (or a model) takes its characters for.

A fence tag or the system note is recognised on this view, not on the raw text, so that spellings a
model reads the same way are caught: compatibility forms (NFKD), letter case, accents and other
combining marks, zero-width and other invisible format characters (soft hyphen included), Cyrillic and
Greek look-alikes (:mod:`~mnemo.safety.confusables`), HTML character references (``&lt;``, ``&#60;``)
and every kind of white space.

The view has exactly one character per character of the text, so a match found in it is a span to cut
from the original: an invisible character folds to ``IGNORED`` (NUL) and a character reference folds to
its character followed by padding: ``IGNORED`` after a reference closed by ``;``, ``OPEN_REFERENCE``
after one without (``&#60``), which text joined after it could still extend. Patterns meant for the view
therefore allow both (``INVISIBLE``) wherever a reader would not notice them. Folding is one ``str.translate`` (plus one substitution per
``&``), so it runs at C speed, linear in the text.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata

from .confusables import CONFUSABLES

__all__ = ["IGNORED", "INVISIBLE", "OPEN_REFERENCE", "end_of_slot", "fold", "unfinished_reference"]

IGNORED = "\x00"
"""What an invisible character (and the padding of a character reference closed by ``;``) folds to."""

OPEN_REFERENCE = "\x01"
"""The padding of a character reference without ``;`` (raw U+0001 folds to it too: it is invisible)."""

INVISIBLE = IGNORED + OPEN_REFERENCE
"""Every character of the view a reader does not see."""

SPACE = " "
"""What every white-space character folds to."""

# A character reference as HTML 5 reads it (numeric ones bounded: a stream must be able to decide one
# from a short prefix).
_REFERENCE = re.compile(r"&(?:#[0-9]{1,10};?|#[xX][0-9a-fA-F]{1,8};?|[^\t\n\f <&#;]{1,32};?)")
_UNFINISHED_REFERENCE = re.compile(r"&(?:#[xX]?[0-9a-fA-F]{0,10}|[^\t\n\f <&#;]{0,32})\Z")
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Mn", "Me", "Cs", "Co", "Cn"})


def _fold_char(char: str) -> str:
    if char.isspace():
        return SPACE
    if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return IGNORED
    lowered = char.lower()
    if len(lowered) == 1 and lowered in CONFUSABLES:
        return CONFUSABLES[lowered]
    decomposed = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)).lower()
    if not decomposed:
        return IGNORED
    if len(decomposed) == 1:
        return CONFUSABLES.get(decomposed, decomposed)
    # A ligature or the like (``ﬁ``): several letters cannot share one slot; it stays what it was.
    return lowered if len(lowered) == 1 else char


class _FoldTable(dict[int, str]):
    """``str.translate`` table filled on demand, one entry per distinct character seen."""

    _LIMIT = 1 << 16

    def __missing__(self, code: int) -> str:
        if len(self) >= self._LIMIT:
            # A text that cycles through all of Unicode must not grow this without bound.
            self.clear()
            self[ord(OPEN_REFERENCE)] = OPEN_REFERENCE
        folded = self[code] = _fold_char(chr(code))
        return folded


_TABLE = _FoldTable({ord(OPEN_REFERENCE): OPEN_REFERENCE})


@functools.lru_cache(maxsize=4096)
def _reference_slots(raw: str) -> str:
    """What a character reference reads as, padded to its own length with ``IGNORED``."""
    decoded = html.unescape(raw)
    if decoded == raw:
        return raw
    padding = IGNORED if raw.endswith(";") else OPEN_REFERENCE
    if not decoded:  # a reference to a control character reads as nothing
        return padding * len(raw)
    # A legacy reference without ``;`` decodes only its head (``&ltx`` -> ``<x``): the text after it
    # keeps its own slots at the end, the padding goes in between.
    return decoded[0] + padding * (len(raw) - len(decoded)) + decoded[1:]


def fold(text: str) -> str:
    """The folded view of ``text``: same length, one folded character per character."""
    if "&" in text:
        # Folding is idempotent, so decoding the references first and folding everything after is safe.
        # The two commonest are replaced at C speed; the rest one by one.
        text = text.replace("&lt;", f"<{IGNORED * 3}").replace("&gt;", f">{IGNORED * 3}")
        text = _REFERENCE.sub(lambda match: _reference_slots(match.group()), text)
    return text.translate(_TABLE)


def end_of_slot(text: str, index: int) -> int:
    """Where the text read as the character at ``index`` ends: past its padding if a reference starts there."""
    if text[index] == "&":
        match = _REFERENCE.match(text, index)
        if match is not None:
            raw = match.group()
            return index + 1 + len(raw) - len(html.unescape(raw)) if _reference_slots(raw) != raw else index + 1
    return index + 1


def unfinished_reference(text: str) -> int:
    """Where a character reference that more text could still change begins at the end of ``text``, or -1."""
    match = _UNFINISHED_REFERENCE.search(text, max(0, len(text) - 48))
    return -1 if match is None else match.start()
