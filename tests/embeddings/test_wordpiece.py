"""The pure-Python tokenizer reproduces BERT uncased tokenization rules."""

from __future__ import annotations

import pytest

from mnemo.embeddings.wordpiece import WordPieceTokenizer


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer.bert_uncased()


def tokens(tokenizer: WordPieceTokenizer, text: str) -> list[str]:
    by_id = {index: token for token, index in tokenizer._vocab.items()}
    return [by_id[i] for i in tokenizer.encode(text)]


def test_shipped_vocabulary_is_bert_uncased(tokenizer: WordPieceTokenizer) -> None:
    assert len(tokenizer._vocab) == 30522
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id) == (0, 100, 101, 102)


def test_text_is_wrapped_in_cls_and_sep(tokenizer: WordPieceTokenizer) -> None:
    assert tokens(tokenizer, "hello") == ["[CLS]", "hello", "[SEP]"]
    assert tokens(tokenizer, "") == ["[CLS]", "[SEP]"]


def test_lowercases_and_strips_accents(tokenizer: WordPieceTokenizer) -> None:
    assert tokenizer.encode("Café NAÏVE") == tokenizer.encode("cafe naive")


def test_every_punctuation_character_is_its_own_token(tokenizer: WordPieceTokenizer) -> None:
    assert tokens(tokenizer, "Hello,world!?") == ["[CLS]", "hello", ",", "world", "!", "?", "[SEP]"]
    assert tokens(tokenizer, "a$b") == ["[CLS]", "a", "$", "b", "[SEP]"]


def test_unknown_words_are_split_into_continuation_pieces(tokenizer: WordPieceTokenizer) -> None:
    pieces = tokens(tokenizer, "embeddings")[1:-1]
    assert len(pieces) > 1
    assert all(piece.startswith("##") for piece in pieces[1:])
    assert "".join(piece.removeprefix("##") for piece in pieces) == "embeddings"


def test_cjk_ideographs_are_split_one_per_token(tokenizer: WordPieceTokenizer) -> None:
    assert tokens(tokenizer, "中文") == ["[CLS]", "中", "文", "[SEP]"]


def test_control_characters_vanish_and_odd_whitespace_separates(tokenizer: WordPieceTokenizer) -> None:
    assert tokenizer.encode("he\x00llo") == tokenizer.encode("hello")
    assert tokenizer.encode("hello\u00a0world\u2028again") == tokenizer.encode("hello world again")


def test_overlong_word_becomes_unknown(tokenizer: WordPieceTokenizer) -> None:
    assert tokens(tokenizer, "x" * 101) == ["[CLS]", "[UNK]", "[SEP]"]


def test_word_with_unmatchable_character_becomes_unknown(tokenizer: WordPieceTokenizer) -> None:
    assert tokens(tokenizer, "ab\U0001f9ecd") == ["[CLS]", "[UNK]", "[SEP]"]


def test_long_text_is_truncated_keeping_sep(tokenizer: WordPieceTokenizer) -> None:
    ids = tokenizer.encode("word " * 1000)
    assert len(ids) == tokenizer.max_length == 256
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id


def test_max_length_must_fit_the_special_tokens() -> None:
    with pytest.raises(ValueError):
        WordPieceTokenizer({"[CLS]": 0, "[SEP]": 1, "[UNK]": 2, "[PAD]": 3}, max_length=1)
