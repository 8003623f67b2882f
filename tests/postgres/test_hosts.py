"""Several hosts (separate homes and processes, one PostgreSQL database) sharing one memory: every write
lands, and no user ever sees another's sessions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mnemo.scope import Scope
from mnemo.storage import open_archive, open_graph, open_home_archive

_HOST = """
import sys, time
from pathlib import Path
from mnemo.storage import open_home_archive
home, user, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
with open_home_archive(home) as archive:
    for n in range(20):
        sid = archive.start_session(f"{user}-{n}")
        archive.append_many(sid, [{"role": "user", "content": f"{user} private note {n} about the zebra project"},
                                  {"role": "assistant", "content": f"noted for {user}"}])
        found = archive.search_messages("zebra project", limit=100)
        # Ranking may add the reply beside a match ("noted for ..."): it is this user's too.
        assert all(h.message.text.startswith(user) or h.message.text == f"noted for {user}" for h in found), "saw another user's message"
"""


def test_hosts_writing_at_once_lose_nothing_and_see_only_their_user(postgres_url, tmp_path: Path):
    users = ["ana", "ben", "chen"]
    open_archive(postgres_url).close()  # schema in place before the race
    go = tmp_path / "go"
    hosts = []
    for user in users:
        home = tmp_path / f"host-{user}"
        home.mkdir()
        env = {**os.environ, "MNEMO_DATABASE_URL": postgres_url, "MNEMO_USER_ID": user}
        hosts.append(subprocess.Popen([sys.executable, "-c", _HOST, str(home), user, str(go)], env=env))
    go.touch()
    assert [h.wait(timeout=120) for h in hosts] == [0] * len(users)
    for user in users:
        with open_archive(postgres_url, scope=Scope(user)) as archive:
            assert archive.count_messages() == 40
            texts = {h.message.text for h in archive.search_messages("zebra", limit=100)}
            assert texts == {f"{user} private note {n} about the zebra project" for n in range(20)}
    assert not any((tmp_path / f"host-{user}" / "mnemo.db").exists() for user in users)


def test_the_home_archive_follows_the_database_url_setting(postgres_url, tmp_path: Path):
    (tmp_path / "config.toml").write_text(f'database_url = "{postgres_url}"\nuser_id = "dana"\n')
    with open_home_archive(tmp_path) as archive:
        assert archive.location.startswith("postgresql://")
        assert archive.scope == Scope("dana")
    assert not (tmp_path / "mnemo.db").exists()


def test_an_agent_with_a_database_url_archives_its_turns_in_postgresql(postgres_url, tmp_path: Path):
    import json

    from mnemo import AgentMemory

    with AgentMemory.open("first", tmp_path, database_url=postgres_url, graph_enabled=False) as memory:
        memory.turn_complete("Where did we put the staging certificate?", "In vault under ops/staging/tls.")
    with AgentMemory.open("second", tmp_path, database_url=postgres_url, graph_enabled=False) as memory:
        result = json.loads(memory.handle_tool_call("session_search", {"query": "staging certificate"}))
    assert "vault" in json.dumps(result)
    with open_archive(postgres_url) as archive:
        assert archive.get_session("first").message_count == 2


def test_the_doctor_checks_the_database_server_without_writing_to_it(postgres_url, tmp_path: Path):
    import psycopg

    from mnemo.doctor import diagnose

    (tmp_path / "config.toml").write_text(f'database_url = "{postgres_url}"\n')
    report = diagnose(tmp_path)
    assert "database.server" in report.checks
    assert [f for f in report.findings if f.check == "database.server"] == []
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regnamespace('mnemo')").fetchone()[0] is None


def test_the_doctor_reports_an_unreachable_database_server(tmp_path: Path):
    from mnemo.doctor import diagnose

    (tmp_path / "config.toml").write_text(f'database_url = "postgresql://nobody:pw@/mnemo?host={tmp_path}"\n')
    [finding] = [f for f in diagnose(tmp_path).findings if f.check == "database.server"]
    assert finding.problem.startswith("cannot reach mnemo's PostgreSQL database")
    assert "pw@" not in (finding.path or "")


_GRAPH_HOST = """
import sys, time
from pathlib import Path
from mnemo.config import load_settings
from mnemo.storage import open_graph
home, user, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
settings = load_settings(home)
while not go.exists():
    time.sleep(0.005)
with open_graph(settings.database_target, scope=settings.scope) as graph:
    for n in range(25):
        graph.remember(f"{user} keeps secret number {n} for the heron project", source=f"{user}-chat")
        found = graph.recall("heron project secret", limit=50, touch=n % 2 == 0)
        assert found and all(r.memory.content.startswith(user) for r in found), "recalled another user's memory"
"""


def test_hosts_sharing_one_graph_lose_no_memory_and_recall_only_their_users(postgres_url, tmp_path: Path):

    users = ["ana", "ana", "ben", "chen"]  # two hosts of one user write the same scope at once
    open_graph(postgres_url).close()
    go = tmp_path / "go"
    hosts = []
    for index, user in enumerate(users):
        home = tmp_path / f"host-{index}"
        home.mkdir()
        env = {**os.environ, "MNEMO_DATABASE_URL": postgres_url, "MNEMO_USER_ID": user}
        hosts.append(subprocess.Popen([sys.executable, "-c", _GRAPH_HOST, str(home), user, str(go)], env=env))
    go.touch()
    assert [h.wait(timeout=180) for h in hosts] == [0] * len(users)
    for user in set(users):
        with open_graph(postgres_url, scope=Scope(user)) as graph:
            memories = graph.memories()
            assert len(memories) == 25 * users.count(user)
            assert {m.content.split()[0] for m in memories} == {user}
            assert graph.stats()["memories"] == len(memories)
    assert not any((tmp_path / f"host-{index}" / "mnemo.db").exists() for index in range(len(users)))


def test_an_agent_with_a_database_url_keeps_its_graph_in_postgresql(postgres_url, tmp_path: Path):
    import json

    from mnemo import AgentMemory

    with AgentMemory.open("first", tmp_path, database_url=postgres_url) as memory:
        stored = json.loads(memory.handle_tool_call("remember", {"content": "The staging cluster runs on Hetzner"}))
    assert stored["success"] is True, stored
    with open_graph(postgres_url) as graph:
        assert [m.content for m in graph.memories()] == ["The staging cluster runs on Hetzner"]
    with AgentMemory.open("second", tmp_path, database_url=postgres_url) as memory:
        found = json.loads(memory.handle_tool_call("recall", {"query": "staging cluster"}))
    assert "Hetzner" in json.dumps(found)
    assert not (tmp_path / "mnemo.db").exists()
