"""``mnemo migrate --to URL``: a home's archive and graph copied into PostgreSQL, every scope, losslessly,
resumably, verified, with the source file never written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psycopg
import pytest

from mnemo.backends.postgres import migrate as migration
from mnemo.backends.postgres.migrate import MigrationConflict, migrate_archive, migrate_graph
from mnemo.backends.sqlite.archive import SessionArchive
from mnemo.cli import main
from mnemo.scope import Scope
from mnemo.storage import open_archive, open_graph

_TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "uptime"}'}}


def _home_archive(home: Path) -> Path:
    """A home whose archive holds two scopes, a lineage, tool calls, CJK text, metadata and multipart content."""
    home.mkdir()
    path = home / "mnemo.db"
    with SessionArchive(path, scope=Scope("ana")) as ana:
        root = ana.start_session("ana-1", title="deploy", metadata={"host": "laptop"}, started_at=1_700_000_000)
        ana.append_many(root, [
            {"role": "user", "content": "deploy the staging cluster", "timestamp": 1_700_000_001},
            {"role": "assistant", "content": "", "tool_calls": [_TOOL_CALL]},
            {"role": "tool", "content": "up 3 days", "tool_call_id": "call_1"},
            {"role": "user", "content": [{"type": "text", "text": "北京的服务器也要更新"}]},
        ])  # fmt: skip
        ana.start_session("ana-2", parent_session_id=root)
        ana.append("ana-2", {"role": "assistant", "content": "continued after compression", "name": "ops-bot"})
    with SessionArchive(path, scope=Scope("ben", "bot", "slack")) as ben:
        ben.append(ben.start_session("ben-1"), {"role": "user", "content": "ben's private plans"})
    return path


def _every_message(target: str | Path, scope: Scope) -> list[dict]:
    with open_archive(target, scope=scope) as archive:
        sessions = archive.list_sessions(limit=100, include_hidden=True, order="oldest")
        return [
            {"session": s.to_dict(), "messages": [(m.id, m.to_message(), m.created_at) for m in archive.messages(s.id)]}
            for s in sessions
        ]


def test_every_scope_is_copied_exactly(postgres_url, tmp_path: Path):
    source = _home_archive(tmp_path / "home")
    report = migrate_archive(source, postgres_url)
    assert (report.sessions_copied, report.messages_copied, report.sessions, report.messages) == (3, 6, 3, 6)
    for scope in (Scope("ana"), Scope("ben", "bot", "slack"), Scope()):
        assert _every_message(postgres_url, scope) == _every_message(source, scope)
    with open_archive(postgres_url, scope=Scope("ana")) as archive:
        assert archive.lineage("ana-2") == ["ana-1", "ana-2"]
        assert [h.message.session_id for h in archive.search_messages("北京")] == ["ana-1"]
        assert archive.search_messages("private plans") == []


def test_the_source_file_is_never_written(postgres_url, tmp_path: Path):
    source = _home_archive(tmp_path / "home")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.parent.iterdir() if p.is_file()}
    migrate_archive(source, postgres_url)
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.parent.iterdir() if p.is_file()}
    assert after == before


def test_an_interrupted_copy_resumes_and_verifies(postgres_url, tmp_path: Path, monkeypatch):
    source = _home_archive(tmp_path / "home")
    monkeypatch.setattr(migration, "BATCH", 2)
    batches = []

    def interrupt(count: int) -> None:
        batches.append(count)
        if len(batches) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        migrate_archive(source, postgres_url, progress=interrupt)
    report = migrate_archive(source, postgres_url)
    assert (report.messages_present, report.messages_copied, report.messages) == (4, 2, 6)
    again = migrate_archive(source, postgres_url)
    assert (again.sessions_copied, again.messages_copied, again.sha256) == (0, 0, report.sha256)


def test_new_messages_are_numbered_after_the_copied_ones(postgres_url, tmp_path: Path):
    source = _home_archive(tmp_path / "home")
    migrate_archive(source, postgres_url)
    with open_archive(postgres_url, scope=Scope("ana")) as archive:
        [new_id] = archive.append_many("ana-2", [{"role": "user", "content": "after the move"}])
    assert new_id == 7


def test_different_rows_under_the_same_ids_are_refused(postgres_url, tmp_path: Path):
    with open_archive(postgres_url) as archive:
        archive.append(archive.start_session("someone-else"), {"role": "user", "content": "already here"})
    source = _home_archive(tmp_path / "home")
    with pytest.raises(MigrationConflict, match="different message with id 1"):
        migrate_archive(source, postgres_url)
    with open_archive(postgres_url) as archive:
        assert [m.text for m in archive.messages("someone-else")] == ["already here"]


def test_the_command_reports_in_json_and_refuses_a_non_url(postgres_url, tmp_path: Path, capsys):
    _home_archive(tmp_path / "home")
    assert main(["--home", str(tmp_path / "home"), "migrate", "--to", postgres_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["success"] and document["archive"]["messages"] == 6 and len(document["archive"]["sha256"]) == 64
    assert document["graph"]["memories"] == 0
    assert main(["--home", str(tmp_path / "home"), "migrate", "--to", "/tmp/elsewhere.db"]) == 1
    assert capsys.readouterr().err == "mnemo: --to must be a postgresql:// URL\n"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM mnemo.messages").fetchone()[0] == 6


def _home_graph(home: Path) -> Path:
    """A home whose archive and graph hold two scopes: memories with edges, a superseded and a forgotten one,
    vectors, a pin, a one-time import marker, and memories extracted from archived messages."""
    from graph._support import ConceptEmbedder
    from mnemo.graph.extraction import extract_messages

    path = _home_archive(home)
    with open_graph(path, scope=Scope("ana"), embedder=ConceptEmbedder()) as ana:
        dog = ana.remember("Ana's dog is called Rex", "fact", source="ana-1", subject="Ana")
        ana.remember("Rex loves the Paris park", relations=[(dog.id, "related_to", 0.7)], pin=True)
        ana.replace(dog.id, "Ana's dog is called Rexy")
        ana.forget(ana.remember("A passing note").id)
        ana.remember_once("curated-import", [("Ana prefers tabs", "preference", "curated")])
        extract_messages(ana, "ana-1", [{"role": "user", "content": "I prefer dark roast coffee every morning."}])
        ana.embed_pending()
    with open_graph(path, scope=Scope("ben", "bot", "slack")) as ben:
        ben.remember("Ben's release is on Friday", "event")
    return path


def _graph_state(target: str | Path, scope: Scope) -> tuple[list, list, dict]:

    with open_graph(target, scope=scope) as graph:
        memories = [m.as_dict() for m in graph.memories(include_forgotten=True)]
        edges = sorted((a.source_id, a.target_id, a.relation.value, a.weight, a.origin) for a in graph.associations())
        stats = graph.stats()
    return memories, edges, stats


def test_the_graph_of_every_scope_is_copied_exactly(postgres_url, tmp_path: Path):
    from graph._support import ConceptEmbedder
    from mnemo.graph.extraction import source_messages

    source = _home_graph(tmp_path / "home")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.parent.iterdir() if p.is_file()}
    migrate_archive(source, postgres_url)
    report = migrate_graph(source, postgres_url)
    assert (report.memories_copied, report.memories, report.associations) == (7, 7, 2)
    assert report.vectors == 6  # every memory of ana's scope (ben's graph has no embedder)
    for scope in (Scope("ana"), Scope("ben", "bot", "slack")):
        assert _graph_state(postgres_url, scope) == _graph_state(source, scope)
    with open_graph(postgres_url, scope=Scope("ana"), embedder=ConceptEmbedder()) as graph:
        assert graph.remember_once("curated-import", [("Ana prefers tabs", "preference", "curated")]) is None
        assert graph.stats()["pending_embeddings"] == 0  # the vectors came along
        assert [r.memory.content for r in graph.recall("puppy", limit=1)] == ["Ana's dog is called Rexy"]
        coffee = [m for m in graph.memories() if "coffee" in m.content]
        assert coffee and source_messages(graph, [coffee[0].id])
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.parent.iterdir() if p.is_file()}
    assert after == before


def test_an_interrupted_graph_copy_resumes_and_a_conflict_is_refused(postgres_url, tmp_path: Path, monkeypatch):

    source = _home_graph(tmp_path / "home")
    monkeypatch.setattr(migration, "BATCH", 3)

    def interrupt(count: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        migrate_graph(source, postgres_url, progress=interrupt)
    report = migrate_graph(source, postgres_url)
    assert (report.memories_present, report.memories_copied, report.memories) == (3, 4, 7)
    with open_graph(postgres_url, scope=Scope("ana")) as graph:
        [first] = graph.memories()[:1]
        with graph._write() as conn:
            conn.execute("UPDATE graph_memories SET content = 'changed meanwhile' WHERE id = ?", (first.id,))
    with pytest.raises(MigrationConflict, match=first.id):
        migrate_graph(source, postgres_url)
