"""Undo the disguises an injection wears before the threat scan reads it.

An attacker who knows a scanner looks for "ignore previous instructions" writes it with Cyrillic look-alike
letters, splits it with zero-width characters, spells it ``1gn0r3``, spaces it out letter by letter, or
hides it in base64, hex, rot13 or percent-encoding for the model to decode later. :func:`fold` turns the
first group back into plain lower-case-able ASCII-ish text; :func:`views` adds one extra reading per
disguise actually present (a decoded payload, the leetspeak reading...), so the patterns and the classifier
can be run over each.

Everything here is bounded: a hostile input can make at most :data:`MAX_VIEWS` extra readings of at most
:data:`MAX_DECODED_CHARS` characters each, whatever its size, and every regular expression is linear.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from typing import NamedTuple
from urllib.parse import unquote

__all__ = ["MAX_DECODED_CHARS", "MAX_VIEWS", "View", "fold", "views"]

MAX_VIEWS = 8
"""At most this many extra readings of one text (decoded payloads, leetspeak, spaced letters, rot13)."""

MAX_DECODED_CHARS = 4_000
"""A decoded payload is cut to this many characters: enough for any note, small enough to stay cheap."""

_MAX_DEPTH = 2
"""Payloads inside payloads (base64 of percent-encoding...) are decoded this many levels deep."""

# --- folding ------------------------------------------------------------------------------------

_ZERO_WIDTH = "\u200b-\u200f\u2060-\u2064\ufeff"
_BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_TAG_CHARACTERS = "\U000e0000-\U000e007f"
INVISIBLE_CLASSES = {"zero_width": _ZERO_WIDTH, "bidi_control": _BIDI_CONTROLS, "tag_character": _TAG_CHARACTERS}
"""Character classes (regular-expression ranges) of the characters that hide text, by rule name."""
# Soft hyphens are removed too: they split words just as well as a zero-width space.
_INVISIBLE = re.compile(f"[\u00ad{_ZERO_WIDTH}{_BIDI_CONTROLS}{_TAG_CHARACTERS}]")

# Letters NFKC leaves alone that a reader (human or model) takes for Latin ones: Cyrillic and Greek
# look-alikes, and the dotted and dotless i (``re.IGNORECASE`` matches them to ASCII ``i`` while
# ``str.lower`` does not, so folding them keeps literal pre-checks and patterns in agreement).
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic lower case
        "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y",
        "\u0445": "x", "\u0456": "i", "\u0458": "j", "\u0455": "s", "\u0501": "d", "\u04bb": "h",
        "\u04cf": "l", "\u0457": "i", "\u0454": "e", "\u043a": "k", "\u043c": "m", "\u043d": "h",
        "\u0442": "t", "\u0432": "b", "\u051b": "q", "\u051d": "w",
        # Cyrillic upper case
        "\u0410": "A", "\u0412": "B", "\u0415": "E", "\u041a": "K", "\u041c": "M", "\u041d": "H",
        "\u041e": "O", "\u0420": "P", "\u0421": "C", "\u0422": "T", "\u0425": "X", "\u0405": "S",
        "\u0406": "I", "\u0408": "J", "\u0423": "Y", "\u04c0": "I",
        # Greek lower case
        "\u03b1": "a", "\u03b5": "e", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v", "\u03bf": "o",
        "\u03c1": "p", "\u03c4": "t", "\u03c5": "u", "\u03c7": "x", "\u03b3": "y", "\u03c9": "w",
        # Greek upper case
        "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I",
        "\u039a": "K", "\u039c": "M", "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T",
        "\u03a5": "Y", "\u03a7": "X",
        # Latin letters that look like others
        "\u0131": "i", "\u0130": "I", "\u0261": "g", "\u0251": "a", "\u01c0": "l", "\u0269": "i",
        "\u1d00": "a", "\u0299": "b", "\u1d04": "c", "\u1d05": "d", "\u1d07": "e", "\u0262": "g",
        "\u029c": "h", "\u026a": "i", "\u1d0a": "j", "\u1d0b": "k", "\u029f": "l", "\u1d0d": "m",
        "\u0274": "n", "\u1d0f": "o", "\u1d18": "p", "\u0280": "r", "\ua731": "s", "\u1d1b": "t",
        "\u1d1c": "u", "\u1d20": "v", "\u1d21": "w", "\u028f": "y", "\u1d22": "z",
    }
)  # fmt: skip


_CONFUSABLE = re.compile("[" + "".join(map(chr, _CONFUSABLES)) + "]")


def fold(text: str) -> str:
    """``text`` NFKC-normalised, invisible and bidi-control characters removed, look-alike letters read as
    the Latin letters they imitate, and combining accents dropped (``ïgnörè`` reads ``ignore``).

    Case is kept: some patterns care whether a word is a shell variable (``$API_KEY``).
    """
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFD", text)
    # Accents are found among the distinct characters (a note has a few dozen), then removed in one pass.
    accents = "".join(char for char in set(decomposed) if unicodedata.combining(char))
    if accents:
        decomposed = re.sub(f"[{accents}]", "", decomposed)
    # Look-alikes are read after the accents are gone, so an accented one ("ό", omicron with tonos) is read
    # too. ``str.translate`` looks up every character of a non-ASCII string (~70 ns each); a character class
    # finds the few that need replacing at C speed.
    return unicodedata.normalize("NFC", _CONFUSABLE.sub(_read_as_latin, decomposed))


def _read_as_latin(match: re.Match[str]) -> str:
    return _CONFUSABLES[ord(match.group())]


# --- extra readings ------------------------------------------------------------------------------


class View(NamedTuple):
    """One reading of a text: ``via`` names the disguise it undoes (``""`` for the folded text itself)."""

    via: str
    text: str


_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"})
# A word that mixes letters with the digits and symbols leetspeak uses for them; pure numbers, version
# strings and ``$VARIABLES`` are not leetspeak.
_LEET_WORD = re.compile(
    r"(?<![\w$@!])(?!\$)(?=[\w$@!]*[a-zA-Z])(?=[\w$@!]*[013457@!$])[a-zA-Z013457@!$]{3,40}(?![\w$@!])"
)
_LEET_DIGITS = re.compile(r"\d")
# "jo@example" followed by ".com": an e-mail address, the commonest "@" between letters in a note.
_DOMAIN_AFTER = re.compile(r"\.[a-z]{2,}\b", re.IGNORECASE)
# A stand-in between letters, or a letter between stand-ins. Written to start at the stand-in, which is rare,
# so the search skips to candidates at C speed instead of trying every letter (5x faster on a note).
_LEET_INSIDE = re.compile(r"[013457@!$](?:(?<=[a-zA-Z][013457@!$])[a-zA-Z]|[a-zA-Z][013457@!$])")

# Letters spaced out one by one ("i g n o r e  a l l"); a wider gap (or a slash) separates the words.
_SPACED_RUN = re.compile(r"(?<![\w])(?:[A-Za-z](?:[ .\-_*]|  {1,3}| ?/ ?)){4,}[A-Za-z](?![\w])")
# What every spaced run holds, with no look-behind before it: a separator, a letter, a gap, a letter, a separator.
# ``re`` jumps between separators to look for it, five times faster than trying the run at every letter.
_SPACED_INSIDE = re.compile(r"[ .\-_*/][A-Za-z][ .\-_*/]{1,4}[A-Za-z][ .\-_*/]")
_SPACED_GAP = re.compile(r" {2,}| ?/ ?")
_SPACED_SEPARATOR = re.compile(r"[ .\-_*]")

_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}")
# Contiguous (``69676e6f7265``), or byte by byte (``\x69\x67``, ``0x69 0x67``, ``69:67``).
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:(?:\\x|0x)?[0-9A-Fa-f]{2}[ ,:]?){8,}")
_HEX_DIGITS = re.compile(r"[0-9A-Fa-f]{2}")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_MIN_DECODED_CHARS = 8
# English run through rot13 is full of these ("the", "and", "you", "is", "to", "ignore", "system",
# "prompt", "instructions"), which plain text in any language hardly ever contains.
_ROT13_WORDS = ("gur", "naq", "lbh", "lbhe", "vf", "gb", "vtaber", "flfgrz", "cebzcg", "vafgehpgvba", "vafgehpgvbaf", "cerivbhf")
_ROT13_TELLS = re.compile(rf"\b(?:{'|'.join(_ROT13_WORDS)})\b")
_ROT13_MIN_TELLS = 2


def _readable(raw: bytes) -> str | None:
    """``raw`` as text if it is UTF-8 made mostly of letters and spaces (a sentence, not binary noise)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < _MIN_DECODED_CHARS:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t\r")
    letters = sum(1 for c in text if c.isalpha() or c == " ")
    if printable < 0.95 * len(text) or letters < 0.6 * len(text):
        return None
    return text[:MAX_DECODED_CHARS]


def _decode_base64(run: str) -> str | None:
    if run.isalpha() or run.isdigit() or len(run) % 4 == 1:
        return None  # a long word or number, not an encoding
    padded = run + "=" * (-len(run) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _readable(raw)


def _decode_hex(run: str) -> str | None:
    digits = "".join(_HEX_DIGITS.findall(run.replace("\\x", " ").replace("0x", " ")))
    try:
        return _readable(bytes.fromhex(digits))
    except ValueError:
        return None


def _payloads(text: str) -> list[View]:
    """Readable payloads encoded inside ``text``, at most :data:`MAX_VIEWS` of them."""
    found: list[View] = []
    window = text[: MAX_DECODED_CHARS * 4]
    for match in _BASE64_RUN.finditer(window):
        if len(found) >= MAX_VIEWS:
            return found
        decoded = _decode_base64(match.group().rstrip("="))
        if decoded is not None:
            found.append(View("base64", decoded))
    for match in _HEX_RUN.finditer(window):
        if len(found) >= MAX_VIEWS:
            return found
        decoded = _decode_hex(match.group())
        if decoded is not None:
            found.append(View("hex", decoded))
    if len(_PERCENT.findall(window, 0, MAX_DECODED_CHARS)) >= 3:
        decoded = unquote(window[:MAX_DECODED_CHARS], errors="replace")
        if decoded != window[:MAX_DECODED_CHARS]:
            found.append(View("url", decoded))
    return found[:MAX_VIEWS]


def _disguised(word: re.Match[str]) -> bool:
    """Whether ``word`` puts a stand-in between letters; the ``@`` of an e-mail address does not count."""
    text = word.group()
    if _DOMAIN_AFTER.match(word.string, word.end()):
        text = text.replace("@", "")
    return _LEET_INSIDE.search(text) is not None


def _leetspeak(text: str) -> str | None:
    # Hex digests, ids and versions ("ed25519", "s3", "5th") mix letters and digits too. Leetspeak puts its
    # stand-ins between letters ("1gn0r3"), so a text gets a leetspeak reading only if some word does that;
    # then every word that stays mostly letters is read back ("4ll" too).
    if not _LEET_INSIDE.search(text):
        return None
    words = [match for match in _LEET_WORD.finditer(text) if _mostly_letters(match.group())]
    if not any(map(_disguised, words)):
        return None
    pieces, kept = [], 0
    for match in words:
        pieces.append(text[kept : match.start()])
        pieces.append(match.group().translate(_LEET))
        kept = match.end()
    pieces.append(text[kept:])
    return "".join(pieces)


def _mostly_letters(word: str) -> bool:
    substitutes = len(_LEET_DIGITS.findall(word)) + sum(word.count(c) for c in "@$!")
    return substitutes * 2 <= len(word)


def _despaced(text: str) -> str | None:
    def join(match: re.Match[str]) -> str:
        words = _SPACED_GAP.split(match.group())
        return " ".join(_SPACED_SEPARATOR.sub("", word) for word in words)

    if not _SPACED_INSIDE.search(text):
        return None
    result, count = _SPACED_RUN.subn(join, text)
    return result if count else None


def _rot13(text: str) -> str | None:
    lowered = text.lower()
    # A tell is a whole word; a text without even the letters of one (most) is not searched for them.
    if not any(map(lowered.__contains__, _ROT13_WORDS)):
        return None
    tells = 0
    for _ in _ROT13_TELLS.finditer(lowered):
        tells += 1
        if tells >= _ROT13_MIN_TELLS:
            return codecs.encode(text, "rot13")
    return None


def views(folded: str) -> list[View]:
    """Extra readings of ``folded`` (the output of :func:`fold`), one per disguise found in it.

    Decoded base64, hex and percent-encoded payloads are folded and searched for payloads again, up to two
    levels deep; leetspeak and spaced-out letters are read back as words; and a text that reads like rotated
    English ("gur", "naq", "lbh") is read back through rot13. At most :data:`MAX_VIEWS`.
    """
    found: list[View] = []
    pending = [View("", folded)]
    for _ in range(_MAX_DEPTH):
        decoded: list[View] = []
        for view in pending:
            for payload in _payloads(view.text):
                via = f"{view.via}+{payload.via}" if view.via else payload.via
                decoded.append(View(via, fold(payload.text)))
        found.extend(decoded)
        pending = decoded
    head = folded[:MAX_DECODED_CHARS * 4]
    for via, reading in (("leetspeak", _leetspeak(head)), ("spaced", _despaced(head)), ("rot13", _rot13(head))):
        if reading is not None:
            found.append(View(via, reading))
    return found[:MAX_VIEWS]


def readings(head: str) -> list[View]:
    """The folded text, then every extra reading of it."""
    folded = fold(head)
    return [View("", folded), *views(folded)]

