"""``mnemo graph``: every subcommand, with --json, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mnemo.cli import main


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
