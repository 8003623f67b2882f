"""Several processes, one per user, on one home at once (a mnemo 0.1 home, so they also race to add scopes
to its archive): every write lands, and each user still sees only their own."""

from __future__ import annotations

import subprocess
import sys

from mnemo import AgentMemory, RecalledMessage
from support.homes import make_mnemo_01_home

_USERS = 4
_TURNS = 20
FAST = {"graph_embedder": "none", "archive_embedder": "none"}

_WORKER = """
import sys, time
from pathlib import Path
from mnemo import AgentMemory
home, user, turns, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():
    time.sleep(0.005)
with AgentMemory.open(f"{user}-session", home, user_id=user, graph_embedder="none") as memory:
    for n in range(turns):
        memory.turn_complete(f"{user} asks about the zebra rollout step {n}", f"step {n} done for {user}")
        memory.remember(f"{user} finished zebra step {n}")
"""


def test_users_writing_at_once_each_keep_all_of_theirs_and_see_nothing_else(tmp_path):
    home = make_mnemo_01_home(tmp_path / "home")
    go = tmp_path / "go"
    users = [f"user{w}" for w in range(_USERS)]
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(home), user, str(_TURNS), str(go)]) for user in users
    ]
    go.touch()
    assert [p.wait(timeout=180) for p in procs] == [0] * _USERS
    for user in users:
        with AgentMemory.open(f"{user}-check", home, user_id=user, **FAST) as memory:
            [group] = memory.search_sessions("zebra rollout", limit=20)
            assert group.root.id == f"{user}-session" and group.root.message_count == 2 * _TURNS
            found = memory.recall("zebra step", types=["fact"], limit=50)
            assert len(found) == _TURNS and all(m.content.startswith(f"{user} ") for m in found)
            said = [m.passage for m in memory.recall("zebra rollout step", limit=50) if isinstance(m, RecalledMessage)]
            assert said and all(user in passage for passage in said)
    with AgentMemory.open("owner", home, **FAST) as memory:  # the empty scope: the 0.1 data, nothing new
        assert [g.root.id for g in memory.search_sessions("quokka")] == ["old"]
        assert memory.search_sessions("zebra") == []
