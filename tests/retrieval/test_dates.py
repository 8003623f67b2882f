"""Reading the periods a query names (mnemo.retrieval.dates)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.retrieval.dates import LATE_DAYS, mentioned_periods

NOW = datetime(2026, 11, 22, 15, 30, tzinfo=UTC).timestamp()  # a Sunday


def at(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "query",
    [
        "What movie did Joanna watch on 1 May, 2022?",
        "what happened on May 1st, 2022",
        "what happened on the 1st of May 2022",
        "notes from 2022-05-01",
    ],
)
def test_a_named_day_covers_that_day(query):
    periods = mentioned_periods(query, NOW)
    assert periods.contains(at(2022, 5, 1, 12))
    assert not periods.contains(at(2022, 4, 28))


def test_a_day_window_starts_a_day_early_and_runs_late_days_past_it():
    periods = mentioned_periods("on 1 May, 2022", NOW)
    assert periods.contains(at(2022, 4, 30, 1))
    assert periods.contains(at(2022, 5, 1 + LATE_DAYS, 23))
    assert not periods.contains(at(2022, 5, 2 + LATE_DAYS, 1))


def test_a_month_of_a_year_covers_the_month_and_a_week_after():
    periods = mentioned_periods("What is John doing as a volunteer in August 2023?", NOW)
    assert periods.contains(at(2023, 8, 13))
    assert periods.contains(at(2023, 9, 5))
    assert not periods.contains(at(2023, 7, 31))
    assert not periods.contains(at(2022, 8, 13))


def test_a_year_alone_covers_the_year():
    periods = mentioned_periods("How many times has Melanie gone to the beach in 2023?", NOW)
    assert periods.contains(at(2023, 6, 1))
    assert not periods.contains(at(2022, 12, 1))


def test_a_month_without_a_year_matches_that_month_of_any_year():
    periods = mentioned_periods("When did Melanie go camping in July?", NOW)
    assert periods.contains(at(2023, 7, 17))
    assert periods.contains(at(2019, 7, 2))
    assert periods.contains(at(2023, 8, 3))  # written down a few days later
    assert not periods.contains(at(2023, 9, 1))


def test_may_the_verb_is_not_a_month():
    assert not mentioned_periods("May I ask what we decided about the API?", NOW)
    assert not mentioned_periods("it may rain", NOW)
    assert mentioned_periods("what did we ship in May", NOW).months == {5}


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("what did I say yesterday", at(2026, 11, 21, 9), at(2026, 11, 19)),
        ("anything new today", at(2026, 11, 22, 9), at(2026, 11, 20)),
        ("what did we decide last week", at(2026, 11, 10), at(2026, 11, 8)),
        ("this week's plan", at(2026, 11, 17), at(2026, 11, 15)),
        ("what changed last month", at(2026, 10, 3), at(2026, 9, 28)),
        ("goals for this year", at(2026, 2, 1), at(2025, 12, 30)),
        ("the bug from three days ago", at(2026, 11, 19, 12), at(2026, 11, 15)),
        ("the talk two weeks ago", at(2026, 11, 8), at(2026, 10, 30)),
    ],
)
def test_relative_periods_are_read_from_now(query, inside, outside):
    periods = mentioned_periods(query, NOW)
    assert periods.contains(inside)
    assert not periods.contains(outside)


@pytest.mark.parametrize(
    "query",
    ["what is the port, 8080?", "meet at 10:30", "version 2.2023 of the tool", "it was 2023% done", "at 2000 pm"],
)
def test_numbers_that_are_not_dates_name_no_period(query):
    assert not mentioned_periods(query, NOW)


def test_an_impossible_day_still_names_its_month():
    periods = mentioned_periods("what happened on 31 February, 2023", NOW)
    assert periods.contains(at(2023, 2, 10))
    assert not periods.contains(at(2023, 3, 31))


def test_a_query_without_a_time_names_no_period():
    periods = mentioned_periods("What is Caroline excited about in the adoption process?", NOW)
    assert not periods
    assert not periods.contains(NOW)


def test_a_day_is_not_also_read_as_its_year():
    periods = mentioned_periods("on 1 May, 2022", NOW)
    assert len(periods.windows) == 1
    assert not periods.contains(at(2022, 11, 1))


@given(st.text(max_size=200))
def test_any_text_is_read_without_raising(text):
    mentioned_periods(text, NOW)
