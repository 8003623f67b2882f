"""Vectors on PostgreSQL: indexed at half precision, scored at full, and older indexes replaced on upgrade."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from graph._support import ConceptEmbedder
from mnemo.backends.postgres.vectors import hnsw_index
from mnemo.storage import open_archive, open_graph

# Where each store keeps its vectors, and the component whose schema version covers them.
TABLES = {"graph": ("graph_vectors", "vector"), "archive": ("message_vectors", "embedding")}
# Each component's schema version in the last release whose vectors were indexed at full precision (the
# archive's later steps are written to be run again over their own result).
FULL_PRECISION = {"graph": 1, "archive": 3}


def _fill(kind: str, url: str) -> None:
    embedder = ConceptEmbedder()
    if kind == "graph":
        with open_graph(url, embedder=embedder) as graph:
            graph.remember("The hound sleeps all day")
            graph.remember("The sedan needs new tyres")
            graph.flush()
    else:
        with open_archive(url, embedder=embedder) as archive:
            session = archive.start_session("s")
            archive.append(session, {"role": "user", "content": "The hound sleeps all day"})
            archive.append(session, {"role": "user", "content": "The sedan needs new tyres"})
            archive.embed_pending()


def _search(kind: str, url: str, text: str) -> list[float]:
    embedder = ConceptEmbedder()
    if kind == "graph":
        with open_graph(url, embedder=embedder) as graph:
            probe = embedder.embed([text])
            return [score for _, score in graph._vectors.search(graph._conn, graph.scope, embedder, probe, 5)]
    with open_archive(url, embedder=embedder) as archive, archive._reading() as conn:
        return [score for _, score in archive._vectors.search(conn, text, 5)]


def _hnsw_indexes(url: str, table: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'mnemo' AND tablename = %s"
            " AND indexdef LIKE '%%USING hnsw%%'",
            (table,),
        ).fetchall()
    return dict(rows)


@pytest.mark.parametrize("kind", TABLES)
def test_vectors_are_indexed_at_half_precision(kind, postgres_url):
    _fill(kind, postgres_url)
    table, column = TABLES[kind]
    expected = hnsw_index(table, column, "concepts-v1", 8)
    indexes = _hnsw_indexes(postgres_url, table)
    assert list(indexes) == [expected.name]
    assert "halfvec_cosine_ops" in indexes[expected.name]


@pytest.mark.parametrize("kind", TABLES)
def test_a_search_scores_at_full_precision(kind, postgres_url):
    # A probe equal to a stored vector: half precision would give a cosine a few ten-thousandths below 1.
    _fill(kind, postgres_url)
    scores = _search(kind, postgres_url, "The hound sleeps all day")
    assert scores[0] == pytest.approx(1.0, abs=1e-6)
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("kind", TABLES)
def test_an_upgrade_replaces_an_earlier_release_full_precision_index(kind, postgres_url):
    _fill(kind, postgres_url)
    table, column = TABLES[kind]
    current = hnsw_index(table, column, "concepts-v1", 8)
    old = f"{table}_hnsw_0123456789ab"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # The database as an earlier release left it: one full-precision index, at that release's version.
        conn.execute(f"DROP INDEX mnemo.{current.name}")
        conn.execute(
            f"CREATE INDEX {old} ON mnemo.{table} USING hnsw ((CAST({column} AS public.vector(8)))"
            f" public.vector_cosine_ops) WHERE {current.rows}"
        )
        conn.execute("UPDATE mnemo.schema_versions SET version = %s WHERE component = %s", (FULL_PRECISION[kind], kind))
    scores = _search(kind, postgres_url, "a puppy")
    assert list(_hnsw_indexes(postgres_url, table)) == [current.name]
    assert scores[0] == pytest.approx(float(np.dot(*ConceptEmbedder().embed(["a puppy", "The hound sleeps all day"]))))
