"""BERT uncased WordPiece tokenization in pure Python.

The MiniLM model needs the exact token ids the original BERT tokenizer produces. The usual way to get them,
Hugging Face ``tokenizers``, drags in ``huggingface_hub`` and an HTTP stack (about 45 MB) only to read one
vocabulary, so this module implements the same pipeline: clean-up, CJK splitting, accent stripping and
lower-casing, whitespace/punctuation splitting, then greedy longest-match-first WordPiece. It follows the
``BertNormalizer`` + ``BertPreTokenizer`` + ``WordPiece`` configuration of the model's ``tokenizer.json``;
``bench/embeddings.py`` checks token-for-token agreement with ``tokenizers`` when that package is present.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from pathlib import Path

_CONTINUATION = "##"
# Longer "words" are almost always base64, hashes or minified junk; BERT maps them to [UNK] outright, which
# also bounds the quadratic cost of the greedy match.
_MAX_WORD_CHARS = 100
_WORD_CACHE_SIZE = 65536

# CJK Unified Ideographs blocks that BERT splits into one token per character (Hangul and kana are not in
# these blocks and are treated like any other letters).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


# Unassigned code points (Cn) are kept, as the reference tokenizer does; they end up as [UNK].
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})
_CAPITAL_SIGMA = "\u03a3"


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # ASCII symbols such as "$", "^" and "`" are not Unicode punctuation, but BERT splits them all the same.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _normalize(text: str) -> str:
    """Drop control characters, unify whitespace, isolate CJK ideographs, strip accents and lower-case."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char not in "\t\n\r" and (code == 0xFFFD or unicodedata.category(char) in _CONTROL_CATEGORIES):
            continue
        if char.isspace():
            out.append(" ")
            continue
        if _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    stripped = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    if _CAPITAL_SIGMA in stripped:
        # str.lower() turns a word-final capital sigma into "ς"; the reference lower-cases char by char.
        return "".join(c.lower() for c in stripped)
    return stripped.lower()


def _split_words(text: str) -> list[str]:
    """Split normalized text on whitespace and make every punctuation character a word of its own."""
    words: list[str] = []
    for chunk in text.split():
        start = 0
        for i, char in enumerate(chunk):
            if _is_punctuation(char):
                if start < i:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPieceTokenizer:
    """Turns text into BERT token ids: ``[CLS] pieces... [SEP]``, truncated to ``max_length`` ids.

    Stateless after construction apart from a bounded per-word cache, so one instance can be shared by
    threads.
    """

    def __init__(self, vocab: Mapping[str, int], *, max_length: int = 256) -> None:
        if max_length < 2:
            raise ValueError("max_length must leave room for [CLS] and [SEP]")
        self._vocab = dict(vocab)
        self.max_length = max_length
        self.cls_id = self._vocab["[CLS]"]
        self.sep_id = self._vocab["[SEP]"]
        self.unk_id = self._vocab["[UNK]"]
        self.pad_id = self._vocab["[PAD]"]
        self._word_ids = functools.lru_cache(maxsize=_WORD_CACHE_SIZE)(self._wordpiece)

    @classmethod
    def bert_uncased(cls, *, max_length: int = 256) -> WordPieceTokenizer:
        """The bert-base-uncased vocabulary (30,522 tokens) shipped with mnemo, shared by all MiniLM models."""
        # A path beside the module, not importlib.resources: importing that costs every process ~15 ms.
        text = (Path(__file__).parent / "vocab.txt").read_text(encoding="utf-8")
        vocab = {token: index for index, token in enumerate(text.split("\n")) if token}
        return cls(vocab, max_length=max_length)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` including ``[CLS]`` and ``[SEP]``, cut to ``max_length``."""
        budget = self.max_length - 2
        ids = [self.cls_id]
        for word in _split_words(_normalize(text)):
            ids.extend(self._word_ids(word))
            if len(ids) > budget:
                del ids[budget + 1 :]
                break
        ids.append(self.sep_id)
        return ids

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > _MAX_WORD_CHARS:
            return (self.unk_id,)
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                candidate = word[start:end] if start == 0 else _CONTINUATION + word[start:end]
                piece = self._vocab.get(candidate)
                if piece is not None:
                    pieces.append(piece)
                    break
                end -= 1
            else:
                # One unmatchable remainder makes the whole word unknown, as in BERT.
                return (self.unk_id,)
            start = end
        return tuple(pieces)
