"""Specification of scrubbing an echoed ``<memory-context>`` block from (streamed) model output."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.safety import ContextScrubber, build_memory_context_block, scrub_memory_context

STREAM_FRAGMENTS = st.sampled_from(
    [
        "<", ">", "/", " ", "\n", "-", "_", "memory", "MEMORY", "context", "Context", "answer", "\u200b",
        'id="1"', "<memo", "ry-context>", "<memory-context>", "</memory-context>", "< / Memory-Context >",
        "<memory-context " + "a" * 199, "<memory-context " + "a" * 200, "\uff1c", "\uff1e", "\uff0f",
        "\u00ad", "\u0301", "&lt;", "&gt;", "&#60;", "&#x3e;", "&", "lt", ";", "#", "\u2039", "\u203a",
        "\u3008", "\u3009", "\u043e", "mem\u043ery", " " * 70, "&lt;/memory-context&gt;", "&amp;",
    ]
)
STREAM_TEXT = st.lists(STREAM_FRAGMENTS | st.text(max_size=5), max_size=40).map("".join)


def stream(text_chunks: list[str]) -> str:
    scrubber = ContextScrubber()
    return "".join(scrubber.feed(chunk) for chunk in text_chunks) + scrubber.flush()


@st.composite
def text_and_split(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(STREAM_TEXT)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[start:end] for start, end in zip(bounds, bounds[1:])]


@given(text_and_split())
def test_any_split_of_the_stream_gives_the_one_shot_result(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    assert stream(chunks) == scrub_memory_context(text)


@given(STREAM_TEXT)
def test_character_by_character_streaming_gives_the_one_shot_result(text: str) -> None:
    assert stream(list(text)) == scrub_memory_context(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sure.<memory-context>recalled</memory-context> Done.", "Sure. Done."),
        ("A<MEMORY-CONTEXT>x</Memory-Context>B", "AB"),
        ("A< memory_context id='1' >x< / Memory-Context >B", "AB"),
        ("A<memory-context>x</memory-context>B<memory-context>y</memory-context>C", "ABC"),
        ("A<memory-context>x<memory-context>y</memory-context>B", "AB"),
        ("A</memory-context>B", "AB"),
        ("A\uff1cmemory-context\uff1ex\uff1c/memory-context\uff1eB", "AB"),
        ("A<memory-context>never closed", "A"),
        ("A <memory-context id=", "A "),
        ("no tags here < > </b>", "no tags here < > </b>"),
        ("a <memo", "a <memo"),
        ("<memory-contextual>stays</memory-contextual>", "<memory-contextual>stays</memory-contextual>"),
        ("", ""),
    ],
)
def test_one_shot_scrub(text: str, expected: str) -> None:
    assert scrub_memory_context(text) == expected


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("<mem\u200bory-context>", "</mem\u200bory-context>"),
        ("&lt;memory-context&gt;", "&lt;/memory-context&gt;"),
        ("\u2039memory-context\u203a", "\u2039/memory-context\u203a"),
        ("\u3008m\u0435mory-context\u3009", "\u3008/m\u0435mory-context\u3009"),
        ("<memo\u00adry-context>", "</memory-c\u00f6ntext>"),
    ],
)
def test_a_look_alike_block_is_scrubbed_like_the_real_one(opening: str, closing: str) -> None:
    assert scrub_memory_context(f"Hi {opening}secret{closing} bye") == "Hi  bye"


@pytest.mark.parametrize(
    "chunks",
    [["Hi &l", "t;memory-context&g", "t;secret&lt;/memory-context&gt; bye"], ["Hi \u2039mem", "\u043ery-context\u203asecret", "</memory-context> bye"]],
)
def test_look_alike_tags_split_across_chunks_are_scrubbed(chunks: list[str]) -> None:
    assert stream(chunks) == "Hi  bye"


def test_ordinary_text_with_references_and_look_alikes_streams_unchanged() -> None:
    text = "AT&T says 5 &lt; 6, \u00abbonjour\u00bb and \u2039hi\u203a"
    assert stream(list(text)) == text


def test_a_built_block_echoed_by_the_model_is_removed_entirely() -> None:
    block = build_memory_context_block([("graph", "Prefers tea."), ("archive", "Met Monday.")])
    assert scrub_memory_context(f"Hi!\n{block}\nBye.") == "Hi!\n\nBye."


@pytest.mark.parametrize(
    ("chunk", "shown_now"),
    [
        ("Hello <", "Hello "),
        ("Hello <memory-con", "Hello "),
        ("Hello </ Memory", "Hello "),
        ("Hello <memory-context id='", "Hello "),
        ("a < b", "a < b"),
        ("x <div>", "x <div>"),
        ("x <memory-contextual", "x <memory-contextual"),
        ("plain text", "plain text"),
    ],
)
def test_feed_holds_back_only_a_possible_tag_prefix(chunk: str, shown_now: str) -> None:
    assert ContextScrubber().feed(chunk) == shown_now


def test_held_back_text_is_released_once_it_cannot_be_a_tag() -> None:
    scrubber = ContextScrubber()
    assert scrubber.feed("Hello <mem") == "Hello "
    assert scrubber.feed("o> world") == "<memo> world"


def test_an_overlong_attribute_list_is_not_a_tag_and_is_released() -> None:
    scrubber = ContextScrubber()
    text = "<memory-context " + "a" * 300
    assert scrubber.feed(text) == text


def test_text_inside_a_block_is_never_emitted_across_chunks() -> None:
    scrubber = ContextScrubber()
    assert scrubber.feed("Hi <memory-") == "Hi "
    assert scrubber.feed("context>secret ") == ""
    assert scrubber.inside_block
    assert scrubber.feed("more secret </memory") == ""
    assert scrubber.feed("-context> bye") == " bye"
    assert not scrubber.inside_block


def test_flush_releases_an_undecided_prefix_that_is_not_a_fence_tag() -> None:
    scrubber = ContextScrubber()
    assert scrubber.feed("ends with <memo") == "ends with "
    assert scrubber.flush() == "<memo"


def test_flush_drops_an_unterminated_block() -> None:
    scrubber = ContextScrubber()
    scrubber.feed("ok <memory-context>partial recall")
    assert scrubber.flush() == ""


def test_flush_resets_the_scrubber_for_reuse() -> None:
    scrubber = ContextScrubber()
    scrubber.feed("<memory-context>unterminated")
    scrubber.flush()
    assert scrubber.feed("fresh answer") == "fresh answer"
