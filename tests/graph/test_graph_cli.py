"""``mnemo graph``: every subcommand, with --json, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mnemo.cli import main
from mnemo.storage import open_graph


def _json(run, *argv):
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_add_recall_show_and_stats(run):
    saved = _json(run, "graph", "add", "The wiki lives at wiki.internal", "--type", "fact")
    memory_id = saved["memory"]["id"]
    found = _json(run, "graph", "recall", "where is the wiki")
    assert [r["id"] for r in found["results"]] == [memory_id]
    shown = _json(run, "graph", "show", memory_id)
    assert shown["memory"]["content"] == "The wiki lives at wiki.internal"
    assert _json(run, "graph", "stats")["by_type"] == {"fact": 1}
    code, out, _ = run("graph", "recall", "wiki")
    assert code == 0 and memory_id[:8] in out


def test_replaces_relate_and_history(run):
    old = _json(run, "graph", "add", "Release every two weeks")["memory"]["id"]
    new = _json(run, "graph", "add", "Release every week", "--replaces", old)["memory"]["id"]
    shown = _json(run, "graph", "show", old)
    assert [m["id"] for m in shown["history"]] == [new, old]
    other = _json(run, "graph", "add", "QA signs off each release", "--relate", f"{new}:related_to:0.5")
    assert other["associations"][0]["weight"] == 0.5
    edge = _json(run, "graph", "relate", other["memory"]["id"], new, "part_of", "--weight", "0.25")
    assert edge["association"]["relation"] == "part_of"


def test_forget_keeps_and_purge_deletes(run):
    kept = _json(run, "graph", "add", "Forget me softly")["memory"]["id"]
    gone = _json(run, "graph", "add", "Purge me for good")["memory"]["id"]
    assert _json(run, "graph", "forget", kept)["purged"] is False
    assert _json(run, "graph", "forget", gone, "--purge")["count"] == 1
    assert _json(run, "graph", "show", kept)["memory"]["forgotten"] is True
    code, _, err = run("graph", "show", gone)
    assert code == 1 and "no memory with id" in err


def test_export_and_import_round_trip_through_files(run, tmp_path):
    _json(run, "graph", "add", "Exported memory one", "--type", "goal")
    target = tmp_path / "graph.json"
    code, _, _ = run("graph", "export", "--format", "json", "-o", str(target))
    assert code == 0
    other = str(tmp_path / "other")
    assert main(["--home", other, "graph", "import", str(target)]) == 0
    assert main(["--home", other, "graph", "import", str(target)]) == 0
    code, out, _ = run("graph", "export")
    assert "## Goal (1)" in out and "Exported memory one" in out


def test_scope_options_confine_every_command(run):
    _json(run, "graph", "add", "Only for alice", "--user", "alice")
    assert _json(run, "graph", "recall", "alice", "--user", "bob")["count"] == 0
    assert _json(run, "graph", "recall", "alice", "--user", "alice")["count"] == 1


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("graph", "add", "x", "--type", "rumour"), "type: unknown memory type"),
        (("graph", "add", "x", "--importance", "1.5"), "importance: must be between 0 and 1"),
        (("graph", "add", "x", "--relate", "nope:related_to"), "relations[0].target: no memory"),
        (("graph", "add", "x", "--relate", "justanid"), "--relate: expected ID:RELATION"),
        (("graph", "add", "x", "--subject", "Caro\x07line"), "subject: must not contain control"),
        (("graph", "add", "x", "--subject", "z" * 201), "subject: is 201 characters"),
        (("graph", "relate", "a", "b", "likes"), "relation: unknown relation"),
        (("graph", "forget", "missing"), "id: no memory with id"),
        (("graph", "import", "/nonexistent/file.json"), "cannot read"),
    ],
)
def test_errors_are_one_line_reasons_and_change_nothing(run, argv, reason):
    code, out, err = run(*argv)
    assert code == 1
    assert err.startswith("mnemo: ") and reason in err and err.count("\n") == 1
    assert _json(run, "graph", "stats")["memories"] == 0


def test_invalid_utf8_on_the_command_line_is_refused(tmp_path):
    env = {**os.environ, "MNEMO_HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "mnemo", "graph", "add", os.fsdecode(b"caf\xe9 au lait")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "content: is not valid UTF-8" in done.stderr


def test_an_invalid_utf8_import_file_is_refused(run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"format": "mnemo-graph", "x": "\xff"}')
    code, _, err = run("graph", "import", str(bad))
    assert code == 1 and "not valid UTF-8" in err


def test_add_stores_the_subject_and_json_output_carries_it(run):
    saved = _json(run, "graph", "add", "Went to a support group", "--subject", "Caroline")
    assert saved["memory"]["subject"] == "Caroline"
    [listed] = _json(run, "graph", "show")["memories"]
    assert listed["subject"] == "Caroline"
    [found] = _json(run, "graph", "recall", "support group")["results"]
    assert found["subject"] == "Caroline"


def test_add_says_who_the_memory_is_about(run):
    code, out, _ = run("graph", "add", "Painted a sunset", "--subject", "Melanie")
    assert code == 0 and out.rstrip().endswith("importance 0.6, about Melanie)")


def test_replaces_keeps_the_old_subject_unless_given_a_new_one(run):
    old = _json(run, "graph", "add", "Lives in Boston", "--subject", "Caroline")["memory"]["id"]
    kept = _json(run, "graph", "add", "Lives in Denver", "--replaces", old)["memory"]
    assert kept["subject"] == "Caroline"
    changed = _json(run, "graph", "add", "Lives in Denver", "--replaces", kept["id"], "--subject", "Melanie")["memory"]
    assert changed["subject"] == "Melanie"


def test_show_and_recall_tables_have_a_subject_column_when_a_memory_has_a_subject(run):
    run("graph", "add", "Went to a support group", "--subject", "Caroline")
    run("graph", "add", "The support group meets on Sundays")
    for argv in (("graph", "show"), ("graph", "recall", "support group")):
        code, out, _ = run(*argv)
        assert code == 0 and "subject" in out and "Caroline" in out


def test_show_and_recall_tables_leave_the_subject_column_out_when_no_memory_has_one(run):
    run("graph", "add", "The support group meets on Sundays")
    for argv in (("graph", "show"), ("graph", "recall", "support group")):
        code, out, _ = run(*argv)
        assert code == 0 and "Sundays" in out and "subject" not in out


def test_stats_counts_active_superseded_and_forgotten_apart(run):
    old = _json(run, "graph", "add", "Standup at 9:30")["memory"]["id"]
    _json(run, "graph", "add", "Standup at 10:00", "--replaces", old)
    gone = _json(run, "graph", "add", "Old wifi password hint", "--type", "observation")["memory"]["id"]
    _json(run, "graph", "add", "Prefers dark mode", "--type", "preference")
    replaced_then_forgotten = _json(run, "graph", "add", "Lunch at noon")["memory"]["id"]
    _json(run, "graph", "add", "Lunch at one", "--replaces", replaced_then_forgotten)
    _json(run, "graph", "forget", gone, replaced_then_forgotten)
    stats = _json(run, "graph", "stats")
    assert (stats["memories"], stats["active"], stats["superseded"], stats["forgotten"]) == (6, 3, 1, 2)
    assert stats["by_type"] == {"fact": 2, "preference": 1}
    code, out, _ = run("graph", "stats")
    assert code == 0 and "memories: 6 (3 active, 1 superseded, 2 forgotten)" in out


def test_embed_computes_every_pending_vector_and_reports_it(tmp_path, run):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text('archive_embedder = "none"\n')
    for n in range(5):
        _json(run, "graph", "add", f"Note number {n} about the build")
    assert _json(run, "graph", "stats")["pending_embeddings"] == 5
    report = _json(run, "graph", "embed")
    assert report["graph"]["embedded"] == 5 and report["graph"]["pending"] == 0
    assert report["archive"] == {"embedder": None, "embedded": 0, "pending": None}
    assert _json(run, "graph", "stats")["pending_embeddings"] == 0
    assert _json(run, "graph", "embed")["graph"]["embedded"] == 0  # nothing left: a second run is a no-op
    code, out, _ = run("graph", "embed")
    assert code == 0 and "graph: embedded 0" in out and "archive: no embedder configured" in out


def test_embed_all_scopes_reaches_every_user(run):
    _json(run, "graph", "add", "Alice's note", "--user", "alice")
    _json(run, "graph", "add", "Bob's note", "--user", "bob")
    assert _json(run, "graph", "embed", "--user", "alice")["graph"]["embedded"] == 1
    report = _json(run, "graph", "embed", "--all-scopes")["graph"]
    assert (report["scopes"], report["embedded"], report["pending"]) == (2, 1, 0)
    assert _json(run, "graph", "stats", "--user", "bob")["pending_embeddings"] == 0


def test_embed_catches_up_the_archive_when_it_has_an_embedder(tmp_path, run):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('archive_embedder = "minilm"\n')
    source = tmp_path / "chat.jsonl"
    source.write_text("".join(json.dumps({"role": "user", "content": f"message {n}"}) + "\n" for n in range(7)))
    code, out, _ = run("sessions", "import", str(source))
    assert code == 0 and "7 messages wait for vectors: mnemo graph embed" in out
    report = _json(run, "graph", "embed")["archive"]
    assert (report["embedded"], report["pending"]) == (7, 0)
    assert _json(run, "graph", "embed")["archive"]["embedded"] == 0


def test_embed_shows_a_progress_bar_on_a_terminal(tmp_path):
    import pty

    home = tmp_path / "home"
    for n in range(3):
        assert main(["--home", str(home), "graph", "add", f"memory {n}"]) == 0
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mnemo", "--home", str(home), "graph", "embed", "--json"],
            stdout=subprocess.PIPE, stderr=follower, timeout=120, env={**os.environ, "COLUMNS": "100"},
        )  # fmt: skip
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0 and json.loads(done.stdout)["graph"]["embedded"] == 3
    assert b"embedding memories" in seen


def test_an_interrupted_embed_keeps_its_batches_and_the_next_run_finishes(run, tmp_path, monkeypatch):
    from mnemo.config import load_settings
    from mnemo.embeddings.minilm import MiniLMEmbedder

    with open_graph(load_settings(tmp_path / "home").database_path) as graph:  # written without vectors
        for n in range(70):
            graph.remember(f"Imported note {n}")
    real_embed, calls = MiniLMEmbedder.embed, []

    def embed_then_fail(self, texts):
        calls.append(len(texts))
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real_embed(self, texts)

    monkeypatch.setattr(MiniLMEmbedder, "embed", embed_then_fail)
    code, _, err = run("graph", "embed")
    assert code == 130 and err == "mnemo: interrupted\n"
    monkeypatch.undo()
    assert _json(run, "graph", "stats")["pending_embeddings"] == 70 - calls[0]
    assert _json(run, "graph", "embed")["graph"] == {
        "embedder": MiniLMEmbedder().name, "scopes": 1, "embedded": 70 - calls[0], "pending": 0,
    }


def test_import_reports_the_vectors_it_leaves_pending_and_export_infers_json(run, tmp_path, capsys):
    _json(run, "graph", "add", "Carried over to another home", "--user", "ada")
    target = tmp_path / "graph.json"
    assert run("graph", "export", "--all-scopes", "-o", str(target))[0] == 0
    assert json.loads(target.read_text())["format"] == "mnemo-graph"  # inferred from the .json suffix
    other = str(tmp_path / "other")
    assert main(["--home", other, "graph", "import", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending_embeddings"] == 1  # in ada's scope, not the default one
    assert main(["--home", other, "graph", "import", str(target)]) == 0
    assert "1 memories wait for vectors: mnemo graph embed --all-scopes" in capsys.readouterr().out
