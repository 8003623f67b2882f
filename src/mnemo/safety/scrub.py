"""Removing an echoed ``<memory-context>`` block from model output, also while it streams.

Models sometimes repeat the fenced recall block in their answer. The user should never see it, and it
must not be stored back into history as if the assistant had said it. Streaming makes this awkward: a
tag can be split anywhere across chunks. :class:`ContextScrubber` holds back only text that may still
turn out to be the start of a fence tag, so everything else reaches the user at once.
"""

from __future__ import annotations

from .fence import stream_patterns
from .fold import end_of_slot, fold, unfinished_reference

__all__ = ["ContextScrubber", "scrub_memory_context"]


def _scrub(text: str, inside: bool, final: bool) -> tuple[str, str, bool]:
    """Scrub ``text``; returns (output, text held back as a possible tag prefix, inside a block).

    Outside a block, text is kept; inside, it is dropped. An opening tag enters a block (a second one
    inside is just dropped), a closing tag leaves it (a stray one outside is dropped too). Tags are
    matched on the folded view, so look-alike spellings count; a character reference that the next
    chunk could still complete is held back with whatever follows it, so the view of what is decided
    never changes.
    """
    if text.isascii() and "<" not in text and "&" not in text:
        return ("" if inside else text), "", inside
    decided = len(text)
    if not final:
        reference = unfinished_reference(text)
        if reference >= 0:
            decided = reference
    folded = fold(text[:decided])
    patterns = stream_patterns()
    output: list[str] = []
    kept_from = 0
    for match in patterns.tag.finditer(folded):
        if not inside:
            output.append(text[kept_from : match.start()])
        inside = patterns.closing.match(folded, match.start()) is None
        kept_from = end_of_slot(text, match.end() - 1)
    held = decided
    last_opener = folded.rfind("<", kept_from)
    open_end = None if last_opener < 0 else patterns.open_end.fullmatch(folded, last_opener)
    # The text ends inside what may still become a tag: held back for the next chunk, or, at the end of
    # the stream, dropped if it is a named but unfinished tag (``<memory-context cla``) and kept if not.
    if open_end is not None and not (final and open_end.lastgroup == "partial"):
        if not inside:
            output.append(text[kept_from:last_opener])
        kept_from = held = decided if final else last_opener
    if not inside:
        output.append(text[kept_from:held])
    return "".join(output), "" if final else text[held:], inside


def scrub_memory_context(text: str) -> str:
    """``text`` without any ``<memory-context>`` block or stray fence tag.

    An unterminated block, or an unfinished tag at the very end, is cut off.
    """
    return _scrub(text, inside=False, final=True)[0]


class ContextScrubber:
    """Streaming form of :func:`scrub_memory_context`.

    Feed chunks in order and concatenate what :meth:`feed` and finally :meth:`flush` return: the result is
    exactly ``scrub_memory_context`` of the whole text, however it was split. Not thread-safe; use one
    scrubber per response stream.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False

    @property
    def inside_block(self) -> bool:
        """Whether the stream is currently inside a fenced block (its text is being dropped)."""
        return self._inside

    def feed(self, chunk: str) -> str:
        """Scrub the next chunk; returns the text that can be shown now."""
        output, self._pending, self._inside = _scrub(self._pending + chunk, self._inside, final=False)
        return output

    def flush(self) -> str:
        """End of stream: release held-back text (an unterminated block is dropped) and reset."""
        output, _, _ = _scrub(self._pending, self._inside, final=True)
        self._pending = ""
        self._inside = False
        return output
