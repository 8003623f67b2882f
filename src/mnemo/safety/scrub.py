"""Removing an echoed ``<memory-context>`` block from model output, also while it streams.

Models sometimes repeat the fenced recall block in their answer. The user should never see it, and it
must not be stored back into history as if the assistant had said it. Streaming makes this awkward: a
tag can be split anywhere across chunks. :class:`ContextScrubber` holds back only text that may still
turn out to be the start of a fence tag, so everything else reaches the user at once.
"""

from __future__ import annotations

from .fence import TagStatus, find_tag_start, match_fence_tag

__all__ = ["ContextScrubber", "scrub_memory_context"]


def _scrub(text: str, inside: bool, final: bool) -> tuple[str, str, bool]:
    """Scrub ``text``; returns (output, text held back as a possible tag prefix, inside a block).

    Outside a block, text is kept; inside, it is dropped. An opening tag enters a block (a second one
    inside is just dropped), a closing tag leaves it (a stray one outside is dropped too).
    """
    output: list[str] = []
    kept_from = 0
    search_from = 0
    while (opening := find_tag_start(text, search_from)) != -1:
        tag = match_fence_tag(text, opening)
        if tag.status is TagStatus.MATCH:
            if not inside:
                output.append(text[kept_from:opening])
            inside = not tag.closing
            kept_from = search_from = tag.end
        elif tag.status is TagStatus.PARTIAL and (tag.named or not final):
            if not inside:
                output.append(text[kept_from:opening])
            # At the end of the stream a named but unfinished tag (``<memory-context cla``) is still
            # part of the fence, so it goes; otherwise it is held until more text decides it.
            return "".join(output), "" if final else text[opening:], inside
        else:
            search_from = opening + 1
    if not inside:
        output.append(text[kept_from:])
    return "".join(output), "", inside


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
