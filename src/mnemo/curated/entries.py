"""The on-disk entry format shared with Hermes Agent: entries joined by ``ENTRY_DELIMITER``.

A file splits only on the full delimiter, so an entry may hold a lone ``§`` or several lines. Parsing
tolerates a UTF-8 BOM and CRLF line ends, strips each piece and drops empty ones; joining is the exact inverse for any list of stripped, non-empty
entries free of the delimiter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

ENTRY_DELIMITER = "\n§\n"
ENTRY_ID_CHARS = 6

_BOM = "\ufeff"


def normalise(text: str) -> str:
    """``text`` without a leading byte-order mark and with LF line ends, as editors on Windows may save it."""
    text = text[1:] if text.startswith(_BOM) else text
    return text.replace("\r\n", "\n")


def parse_entries(text: str) -> list[str]:
    """Split file text into entries, in file order, duplicates kept."""
    pieces = normalise(text).split(ENTRY_DELIMITER)
    return [piece.strip() for piece in pieces if piece.strip()]


def join_entries(entries: Iterable[str]) -> str:
    """The file text for ``entries``."""
    return ENTRY_DELIMITER.join(entries)


def joined_length(entries: Iterable[str]) -> int:
    """Characters ``entries`` occupy once joined, delimiters included: what the limits count."""
    return len(join_entries(entries))


def dedupe(entries: Iterable[str]) -> list[str]:
    """``entries`` with repeats dropped, first occurrences kept in order."""
    return list(dict.fromkeys(entries))


def survives_round_trip(text: str) -> bool:
    """Whether re-joining the parsed ``text`` reproduces it, ignoring whitespace at the ends.

    False means a rewrite would silently reshape what someone put in the file by hand (stray
    delimiters, padding around entries), which the drift guard refuses to do.
    """
    return join_entries(parse_entries(text)) == normalise(text).strip()


def entry_id(entry: str) -> str:
    """A short id for an entry, derived from its text alone: the same entry has the same id in every
    process and session, and none is ever written to the file (which keeps the Hermes format)."""
    return hashlib.sha256(entry.encode("utf-8", "surrogatepass")).hexdigest()[:ENTRY_ID_CHARS]
