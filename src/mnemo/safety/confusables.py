"""Look-alike characters a model reads as the ASCII ones that spell mnemo's fence.

Unicode normalisation (NFKD) already maps full-width and compatibility forms (``ｍ``, ``＜``, ``〈``) to
their plain letters; what it leaves alone are letters of other scripts that merely look Latin (Cyrillic
``о``, Greek ``ο``) and punctuation that reads as an angle bracket, a slash or a dash. This table covers
those, for the letters and signs that occur in the fence tag and the system note. Keys are lower-case
(the folding lower-cases first); every value is one ASCII character.
"""

from __future__ import annotations

__all__ = ["CONFUSABLES"]

_LETTERS = {
    "a": "аɑα",
    "b": "ьвβ",
    "c": "сϲⅽᴄ",
    "d": "ԁⅾ",
    "e": "еєᴇεҽ",
    "g": "ɡց",
    "h": "һհн",
    "i": "іιɩⅰ",
    "j": "јϳ",
    "k": "кκᴋ",
    "l": "ӏⅼǀ",
    "m": "мᴍⅿ",
    "n": "пηոɴ",
    "o": "оοօᴏσ",
    "p": "рρ",
    "r": "гʀᴦ",
    "s": "ѕꜱ",
    "t": "тτᴛ",
    "u": "υսᴜ",
    "v": "νѵᴠ",
    "w": "ԝѡᴡω",
    "x": "хχⅹ",
    "y": "уүγʏ",
}

_SIGNS = {
    "<": "‹«〈⟨❮˂ᐸ⋖",
    ">": "›»〉⟩❯˃ᐳ⋗",
    "/": "⁄∕⧸╱",
    "-": "_‐‑‒–—―−⁃﹣",
    "[": "⟦〚【〔",
    "]": "⟧〛】〕",
}

CONFUSABLES: dict[str, str] = {
    look_alike: plain for table in (_LETTERS, _SIGNS) for plain, chars in table.items() for look_alike in chars
}
"""Look-alike character (lower-case) -> the ASCII character a reader takes it for."""
