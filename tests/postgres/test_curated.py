"""Curated memory in PostgreSQL (``curated_backend = "postgres"``): hosts share one pair per home scope, lose
no update, keep the frozen snapshot, and ``mnemo migrate --curated`` moves a home's files in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from mnemo import AgentMemory, MemoryStore
from mnemo.backends.postgres.connection import PostgresDatabase
from mnemo.backends.postgres.curated import COMPONENT, MIGRATIONS, postgres_storage
from mnemo.cli import main
from mnemo.config import load_settings
from mnemo.curated.ops import Add
from mnemo.database import table_owner
from mnemo.errors import ConfigError
from mnemo.scope import Scope
from mnemo.storage import open_curated

_HOST = """
import sys, time
from pathlib import Path
from mnemo.storage import open_curated
from mnemo.config import load_settings
from mnemo.errors import ConfigError
from mnemo.curated.ops import Add
home, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
store = open_curated(load_settings(home))
store.load()
while not go.exists():
    time.sleep(0.005)
for n in range(5):
    store.apply("memory", Add(f"{name} learned fact {n}"))
store.close()
"""


def _home(root: Path, name: str, url: str, **settings: str) -> Path:
    home = root / name
    home.mkdir()
    lines = [f'database_url = "{url}"', 'curated_backend = "postgres"', "memory_char_limit = 5000"]
    lines += [f'{key} = "{value}"' for key, value in settings.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")
    return home


def test_hosts_adding_at_once_lose_no_entry(postgres_url, tmp_path: Path):
    homes = [_home(tmp_path, f"host-{n}", postgres_url) for n in range(4)]
    open_curated(load_settings(homes[0])).close()  # the tables exist before the race
    go = tmp_path / "go"
    hosts = [subprocess.Popen([sys.executable, "-c", _HOST, str(h), h.name, str(go)], env=dict(os.environ)) for h in homes]
    go.touch()
    assert [h.wait(timeout=120) for h in hosts] == [0] * len(hosts)
    store = open_curated(load_settings(homes[0]))
    store.load()
    assert sorted(store.entries("memory")) == sorted(f"host-{h} learned fact {n}" for h in range(4) for n in range(5))
    assert len(store.history.records("memory")) == 20
    store.close()
    assert not any((h / "memories" / "MEMORY.md").exists() for h in homes)


def test_an_agent_on_another_host_starts_from_the_shared_snapshot(postgres_url, tmp_path: Path):
    first, second = _home(tmp_path, "laptop", postgres_url), _home(tmp_path, "server", postgres_url)
    with AgentMemory.open("s1", first, graph_enabled=False) as memory:
        saved = json.loads(memory.handle_tool_call("memory", {"action": "add", "target": "user", "content": "Prefers metric units"}))
        assert saved["success"] is True
        assert "Prefers metric units" not in memory.system_prompt()  # the snapshot stays frozen
    with AgentMemory.open("s2", second, graph_enabled=False) as memory:
        assert "Prefers metric units" in memory.system_prompt()


def test_per_user_pairs_never_meet(postgres_url, tmp_path: Path):
    ana = open_curated(load_settings(_home(tmp_path, "a", postgres_url, user_id="ana"), curated_per_user=True))
    ben = open_curated(load_settings(_home(tmp_path, "b", postgres_url, user_id="ben"), curated_per_user=True))
    for store in (ana, ben):
        store.load()
    ana.apply("user", Add("Ana's allergy: peanuts"))
    ben.load()
    assert ben.entries("user") == () and ben.history.records() == []
    ana.close()
    ben.close()


def test_the_postgres_backend_needs_a_database_url(tmp_path: Path):
    with pytest.raises(ConfigError, match="curated_backend = 'postgres' needs database_url"):
        load_settings(tmp_path, curated_backend="postgres")


def test_migrate_copies_the_curated_files_and_history_once(postgres_url, tmp_path: Path, capsys):
    home = tmp_path / "home"
    with AgentMemory.open("s1", home, graph_enabled=False) as memory:
        memory.handle_tool_call("memory", {"action": "add", "target": "memory", "content": "Deploys go through ArgoCD"})
        memory.handle_tool_call("memory", {"action": "add", "target": "user", "content": "Name is Ada"})
    assert main(["--home", str(home), "migrate", "--to", postgres_url, "--curated", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["curated_documents"] == 2
    assert main(["--home", str(home), "migrate", "--to", postgres_url, "--curated", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["curated_documents"] == 0  # already there: left as is
    store = open_curated(load_settings(home, database_url=postgres_url, curated_backend="postgres"))
    store.load()
    assert store.entries("memory") == ("Deploys go through ArgoCD",) and store.entries("user") == ("Name is Ada",)
    assert [r.added for r in store.history.records()] == [("Deploys go through ArgoCD",), ("Name is Ada",)]
    store.close()
    assert (home / "memories" / "MEMORY.md").read_text() == "Deploys go through ArgoCD"


def _history_bytes(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT coalesce(sum(coalesce(length(before), 0) + coalesce(length(after), 0) + coalesce(length(edits), 0)"
            " + length(origin)), 0) FROM mnemo.curated_history"
        ).fetchone()[0]


def _scoped_store(url: str, directory: Path) -> MemoryStore:
    store = MemoryStore(directory, storage=postgres_storage(url, Scope()), memory_char_limit=10_000_000)
    store.load()
    return store


def test_history_rows_keep_what_each_write_changed(postgres_url, tmp_path: Path):
    store = _scoped_store(postgres_url, tmp_path)
    sizes = []
    for i in range(300):
        store.apply("memory", Add(f"note {i:05d}: port {6000 + i}"))
        sizes.append(_history_bytes(postgres_url))
    assert sizes[-1] - sizes[-101] < 1.5 * sizes[99]  # whole copies would make the last 100 cost 5 times more
    records = store.history.records("memory")
    assert [r.after[-1] for r in records] == [f"note {i:05d}: port {6000 + i}" for i in range(300)]
    assert all(a.after == b.before for a, b in zip(records, records[1:]))
    store.close()


def test_history_rows_of_the_first_schema_still_read_and_continue(postgres_url, tmp_path: Path):
    database = PostgresDatabase.shared(postgres_url)
    try:
        database.migrate(COMPONENT, MIGRATIONS[:1], lambda t: table_owner(t) is not None)
        database.write(lambda ex: ex.execute(
            "INSERT INTO curated_history (id, user_id, agent_id, channel_id, target, operation, at, before, after, origin)"
            " VALUES ('h00000001', '', '', '', 'memory', 'add', 1.0, '[]', '[\"project uses Bazel\"]', '{}')"
        ))  # fmt: skip
        database.write(lambda ex: ex.execute(
            "INSERT INTO curated_documents (user_id, agent_id, channel_id, target, text, updated_at)"
            " VALUES ('', '', '', 'memory', 'project uses Bazel', 1.0)"
        ))  # fmt: skip
    finally:
        database.release()
    store = _scoped_store(postgres_url, tmp_path)
    store.apply("memory", Add("deploys on Fridays"))
    records = store.history.records()
    assert [(r.id, r.after) for r in records] == [
        ("h00000001", ("project uses Bazel",)), (records[1].id, ("project uses Bazel", "deploys on Fridays")),
    ]  # fmt: skip
    store.close()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT before, after FROM mnemo.curated_history ORDER BY seq").fetchall() == [
            ('[]', '["project uses Bazel"]'), (None, None)  # the new row continues from the first by its id
        ]  # fmt: skip
