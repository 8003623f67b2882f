"""Maintenance through its doors: the remember tool's ``pin``, disputed memories in tool results and
per-turn context, ``mnemo graph pin|unpin|unforget|maintain|show`` and ``mnemo prompt``."""

from __future__ import annotations

import json

from mnemo.graph import MemoryGraph
from mnemo.tools.graph import REMEMBER_TOOL_SCHEMA

DAY = 86_400.0


def _call(provider, name, arguments):
    return json.loads(provider.handle_tool_call(name, arguments))


def test_the_remember_tool_declares_and_honours_pin(provider):
    assert REMEMBER_TOOL_SCHEMA["function"]["parameters"]["properties"]["pin"]["type"] == "boolean"
    saved = _call(provider, "remember", {"content": "Never page Ben at night", "type": "decision", "pin": True})
    assert saved["success"] and saved["pinned"] is True
    assert provider.graph.get(saved["id"]).pinned


def test_a_pin_that_is_not_a_boolean_is_refused_and_nothing_is_saved(provider):
    result = _call(provider, "remember", {"content": "x", "pin": "yes"})
    assert not result["success"] and result["field"] == "pin"
    assert provider.graph.memories() == []


def _disputed(graph: MemoryGraph) -> tuple[str, str]:
    older = graph.remember("The standup is at 9", importance=1.0)
    newer = graph.remember("The standup is at 10", importance=0.1)
    graph.relate(newer.id, older.id, "contradicts")
    return older.id, newer.id


def test_the_recall_tool_marks_the_older_side_of_a_contradiction(provider):
    older, newer = _disputed(provider.graph)
    results = _call(provider, "recall", {"query": "when is the standup"})["results"]
    assert [r["id"] for r in results] == [newer, older]
    assert "status" not in results[0]
    assert (results[1]["status"], results[1]["newer"]) == ("disputed", newer)


def test_per_turn_context_marks_the_older_side_of_a_contradiction(provider):
    _disputed(provider.graph)
    lines = provider.enrich_turn("when is the standup?", []).splitlines()
    assert "The standup is at 10" in lines[0] and "disputed" not in lines[0]
    assert "The standup is at 9" in lines[1] and "disputed: a newer memory says otherwise" in lines[1]


def _json(run, *argv):
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_cli_pin_unpin_and_show_with_importance_and_base_importance(run):
    memory_id = _json(run, "graph", "add", "Keep the backups offsite")["memory"]["id"]
    assert _json(run, "graph", "pin", memory_id)["memories"][0]["pinned"] is True
    shown = _json(run, "graph", "show", memory_id)
    assert shown["memory"]["pinned"] is True
    assert shown["memory"]["importance"] == shown["memory"]["base_importance"] == 0.6
    assert _json(run, "graph", "unpin", memory_id)["memories"][0]["pinned"] is False
    code, out, _ = run("graph", "show", memory_id)
    assert code == 0 and "base_importance: 0.6" in out


def test_cli_pin_of_an_unknown_id_fails_with_one_line_and_changes_nothing(run):
    memory_id = _json(run, "graph", "add", "Keep the backups offsite")["memory"]["id"]
    code, _, err = run("graph", "pin", memory_id, "nope")
    assert code != 0 and "nope" in err and len(err.strip().splitlines()) == 1
    assert _json(run, "graph", "show", memory_id)["memory"]["pinned"] is False


def test_cli_maintain_reports_its_keys_and_a_second_pass_reports_zeros(run):
    _json(run, "graph", "add", "Keep the backups offsite")
    first = _json(run, "graph", "maintain")
    for key in ("decayed", "pruned", "linked", "merged", "contradictions", "seconds"):
        assert key in first
    second = _json(run, "graph", "maintain")
    assert [second[k] for k in ("decayed", "pruned", "linked", "merged", "contradictions")] == [0] * 5
    assert _json(run, "graph", "maintain", "--dry-run")["dry_run"] is True
    code, out, _ = run("graph", "maintain")
    assert code == 0 and "contradictions" in out


def test_cli_unforget_brings_a_memory_back(run):
    memory_id = _json(run, "graph", "add", "Keep the backups offsite")["memory"]["id"]
    _json(run, "graph", "forget", memory_id)
    assert _json(run, "graph", "unforget", memory_id)["memories"][0]["forgotten"] is False


def test_mnemo_prompt_prints_each_block_with_its_size(run, tmp_path):
    memory_dir = tmp_path / "home" / "memories"
    memory_dir.mkdir(parents=True)
    (memory_dir / "MEMORY.md").write_text("The deploy script is deploy.sh", encoding="utf-8")
    _json(run, "graph", "add", "The user is Ana", "--type", "identity")
    shown = _json(run, "prompt")
    names = [b["name"] for b in shown["blocks"]]
    assert names == ["memory", "bulletin"]
    assert all(b["chars"] == len(b["text"]) for b in shown["blocks"])
    assert shown["chars"] == len(shown["prompt"]) and "The user is Ana" in shown["prompt"]
    code, out, _ = run("prompt")
    assert code == 0 and "bulletin" in out and "The user is Ana" in out
