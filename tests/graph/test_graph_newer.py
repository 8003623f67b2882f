"""Telling a newer version of a statement from another statement: same subject, different value."""

from __future__ import annotations

import pytest

from mnemo.graph.newer import disagree, later_first


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("Staging is Postgres 15 on port 5433; deploy from the infra repo.", "Correction: staging moved to port 6543."),
        ("The nightly backup job runs at 2am on the NAS.", "The nightly backup job now runs at 4am on the NAS."),
        ("The docs site is hosted on Netlify.", "The docs site is now hosted on Vercel."),
    ],
)
def test_two_values_for_one_subject_disagree(earlier, later):
    assert disagree(earlier, later)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Staging is Postgres 15 on port 5433.", "Staging is Postgres 15 on port 5433!"),  # the same value
        ("Staging is Postgres 15 on port 5433.", "The billing service keeps 3 workers busy."),  # other subjects
    ],
)
def test_a_repeat_or_another_subject_is_no_disagreement(one, other):
    assert not disagree(one, other)


def test_the_later_of_two_disagreeing_statements_is_lifted_above_the_earlier_and_nothing_is_dropped():
    said = [
        ("The nightly backup job runs at 2am on the NAS.", 1.0),
        ("Lunch is at noon on Fridays.", 2.0),
        ("The nightly backup job now runs at 4am on the NAS.", 3.0),
    ]
    ordered = later_first(said, lambda item: item[0], lambda item: item[1])
    assert [when for _, when in ordered] == [3.0, 1.0, 2.0]
