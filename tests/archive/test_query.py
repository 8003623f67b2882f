"""The FTS5 query sanitiser: whatever is typed becomes a valid query or nothing, never an error."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo.retrieval import MAX_QUERY_CHARS, meaningful_terms, or_query, parse_query, sanitize


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE words USING fts5(body, tokenize='porter unicode61')")
    conn.execute("CREATE VIRTUAL TABLE grams USING fts5(body, tokenize='trigram')")
    for body in ("docker-compose up failed on P2.2", "edit my_app.config.ts please", "东京塔 is tall", "plain words here"):
        conn.execute("INSERT INTO words VALUES (?)", (body,))
        conn.execute("INSERT INTO grams VALUES (?)", (body,))
    return conn


def _runs(conn: sqlite3.Connection, query: str) -> list:
    return [conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (query,)).fetchall() for t in ("words", "grams")]


@pytest.mark.parametrize("term", ["docker-compose", "P2.2", "my_app.config.ts"])
def test_joined_terms_become_phrases_that_find_their_text(fts, term):
    query = sanitize(term)
    assert query.startswith('"') and " " in query
    assert fts.execute("SELECT count(*) FROM words WHERE words MATCH ?", (query,)).fetchone()[0] == 1


def test_balanced_quotes_are_kept_as_a_phrase():
    assert sanitize('"up failed" docker') == '"up failed" "docker"'


def test_an_unbalanced_quote_is_dropped_and_its_words_kept():
    assert sanitize('"up failed') == '"up" "failed"'


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("AND docker", '"docker"'),
        ("docker OR", '"docker"'),
        ("docker AND OR NOT compose", '"docker" AND "compose"'),
        ("NOT docker", '"docker"'),
        ("docker NOT compose", '"docker" NOT "compose"'),
    ],
)
def test_operators_survive_only_between_terms(typed, expected):
    assert sanitize(typed) == expected


def test_a_prefix_star_is_kept():
    assert sanitize("dock* compose") == '"dock"* "compose"'


@pytest.mark.parametrize("junk", [":", "^", "()", "***", "\"\"", "-", "(", "+-*/", "", "   ", "AND OR NOT"])
def test_punctuation_only_queries_sanitise_to_nothing(junk):
    assert sanitize(junk) == ""


def test_column_filters_and_groups_are_neutralised(fts):
    query = sanitize("body: (docker OR ^compose) {x}")
    assert all(isinstance(r, list) for r in _runs(fts, query))


def test_the_query_length_is_capped():
    assert len(sanitize("word " * 2000)) < 2 * MAX_QUERY_CHARS


def test_non_strings_and_lone_surrogates_do_not_break_it(fts):
    assert sanitize(None) == ""
    assert sanitize(12345) == '"12345"'
    query = sanitize("docker\ud800compose")
    _runs(fts, query)


def test_meaningful_terms_drop_stop_words_and_possessives():
    assert meaningful_terms("What did Caroline's sister say about the adoption agency?") == [
        "caroline", "sister", "adoption", "agency",
    ]


def test_natural_language_is_not_marked_explicit_but_operators_are():
    assert not parse_query("where is the staging server").explicit
    assert parse_query("staging OR production").explicit
    assert not parse_query("the book \"Becoming Nicole\"").explicit


def test_or_query_joins_quoted_terms():
    assert or_query(["adoption", "docker-compose"]) == '"adoption" OR "docker compose"'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_any_text_sanitises_to_a_valid_query_or_nothing(fts, text):
    query = sanitize(text)
    if query:
        _runs(fts, query)  # raises on an FTS5 syntax error
    terms = or_query(meaningful_terms(text))
    if terms:
        _runs(fts, terms)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list('"*^:()-+. ANDORNOTx_\'\\{}东京')), max_size=60))
def test_operator_soup_sanitises_to_a_valid_query_or_nothing(fts, text):
    query = sanitize(text)
    if query:
        _runs(fts, query)
