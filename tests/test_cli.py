"""How every ``mnemo`` command ends: one-line reasons, JSON on errors, exit codes, closed pipes, and
``--json`` on every command."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mnemo.cli import build_parser, main
from mnemo.config import load_settings
from support.openai_server import OpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[1]
# Every page a reader copies commands from: the front page and the documentation site's pages.
DOCUMENTATION = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.fixture
def run(tmp_path, capsys):
    """``run(*argv, home=...)`` -> (exit code, stdout, stderr), in process."""

    def run(*argv: str, home: Path | str | None = None) -> tuple[int, str, str]:
        code = main(["--home", str(home or tmp_path / "home"), *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def _one_line(err: str) -> str:
    assert err.startswith("mnemo: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err[len("mnemo: ") :].rstrip("\n")


def _json_error(out: str, code: int) -> dict:
    document = json.loads(out)
    assert document["success"] is False and document["exit_code"] == code
    assert isinstance(document["error"], str) and "\n" not in document["error"]
    return document


# ------------------------------------------------------------------ failures are one line


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("sessions", "list", "--limit", "abc"), "sessions list: argument --limit: invalid int value: 'abc'"),
        (("bogus",), "argument COMMAND: invalid choice: 'bogus'"),
        (("sessions",), "sessions: the following arguments are required: ACTION"),
        (("graph", "stats", "--nope"), "unrecognized arguments: --nope"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_code_2(run, argv, reason):
    code, out, err = run(*argv)
    assert code == 2 and out == ""
    assert reason in _one_line(err) and "--help" in err


def test_a_bad_command_line_with_json_prints_a_json_error(run):
    code, out, err = run("sessions", "list", "--limit", "abc", "--json")
    assert code == 2
    assert "invalid int value" in _json_error(out, 2)["error"]
    _one_line(err)


def test_a_home_that_is_a_file_is_refused_naming_it(run, tmp_path):
    home = tmp_path / "home"
    home.write_text("not a directory")
    for argv in (("memory", "show"), ("graph", "stats"), ("sessions", "list"), ("demo",)):
        code, _, err = run(*argv, home=home)
        assert code == 1 and _one_line(err) == f"home {home} is not a directory"
    assert home.read_text() == "not a directory"


def test_a_home_that_cannot_be_created_is_refused_naming_the_obstacle(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run("graph", "add", "x", "--json", home=blocker / "home")
    assert code == 1
    assert _one_line(err) == f"cannot create home {blocker / 'home'}: {blocker} is not a directory"
    assert _json_error(out, 1)["error"] == _one_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes any directory")
def test_a_home_without_permission_is_refused(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o000)
    try:
        code, _, err = run("memory", "show", home=home)
    finally:
        home.chmod(0o700)
    assert code == 1 and "permission denied" in _one_line(err).lower()


def test_a_home_the_system_will_not_create_is_one_line(run):
    # Even root may not create a directory in sysfs: the OSError becomes the reason.
    code, _, err = run("graph", "stats", home="/sys/mnemo-test-home")
    assert code == 1 and "/sys/mnemo-test-home" in _one_line(err)


def test_an_unreadable_config_is_one_line(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("memory_char_limit = = 3\n")
    code, out, err = run("memory", "show", "--json", home=home)
    assert code == 1 and "config.toml is not valid UTF-8 TOML" in _one_line(err)
    _json_error(out, 1)


def test_a_database_that_is_not_one_is_one_line_and_left_alone(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    database = load_settings(home).database_path
    database.write_bytes(b"this is not sqlite " * 100)
    for argv in (("graph", "stats"), ("sessions", "list")):
        code, _, err = run(*argv, home=home)
        assert code == 1 and "not an SQLite database" in _one_line(err)
    assert database.read_bytes() == b"this is not sqlite " * 100


def test_an_os_error_names_the_path(run, tmp_path):
    target = tmp_path / "missing-dir" / "graph.md"
    code, out, err = run("graph", "export", "-o", str(target), "--json")
    assert code == 1 and _one_line(err) == f"cannot write {target}: No such file or directory"
    assert _json_error(out, 1)["error"] == _one_line(err)


def test_library_refusals_carry_their_field_in_json(run):
    code, out, _ = run("graph", "add", "x", "--type", "rumour", "--json")
    assert code == 1 and _json_error(out, 1)["field"] == "type"


def test_an_unexpected_error_is_one_line_without_traceback(run, monkeypatch):
    def broken(args):
        raise RuntimeError("something the code did not expect")

    monkeypatch.setattr("mnemo.cli.graph._stats", broken)
    code, out, err = run("graph", "stats", "--json")
    assert code == 1
    reason = _one_line(err)
    assert "RuntimeError: something the code did not expect" in reason and "-v" in reason
    _json_error(out, 1)


def test_verbose_shows_the_traceback_of_an_unexpected_error(tmp_path):
    script = (
        "import sys, mnemo.cli.graph as g\n"
        "def broken(args): raise RuntimeError('boom')\n"
        "g._stats = broken\n"
        "from mnemo.cli import main\n"
        f"sys.exit(main(['--home', {str(tmp_path)!r}, '-v', 'graph', 'stats']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and done.stderr.rstrip().endswith("mnemo: unexpected error (RuntimeError: boom)")


def test_ctrl_c_ends_with_130(run, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("mnemo.cli.graph._stats", interrupted)
    code, _, err = run("graph", "stats")
    assert code == 130 and _one_line(err) == "interrupted"


def test_warnings_before_a_failure_leave_the_failure_one_line(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memories").write_text("a file where the directory should be")
    code, _, err = run("memory", "add", "hello", home=home)
    assert code == 1 and _one_line(err).startswith(f"cannot write {home / 'memories' / 'MEMORY.md'}")


def test_warnings_of_a_command_that_succeeds_follow_it_one_line_each(run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memories").write_text("a file where the directory should be")
    code, out, err = run("memory", "show", home=home)
    assert code == 0 and "unreadable" in out
    assert err.splitlines() == [
        f"mnemo: cannot read {home / 'memories' / name} (Not a directory); refusing to write over it"
        for name in ("MEMORY.md", "USER.md")
    ]


def test_a_warning_carrying_an_exception_shows_no_traceback(run, monkeypatch):
    import logging

    def warns(args):
        try:
            raise ValueError("inner detail")
        except ValueError:
            logging.getLogger("mnemo.providers").warning("team: dropped: initialization failed", exc_info=True)
        return 0

    monkeypatch.setattr("mnemo.cli.graph._stats", warns)
    code, _, err = run("graph", "stats")
    assert code == 0 and err == "mnemo: team: dropped: initialization failed\n"


# ------------------------------------------------------------------ closed pipes


def _cli(*argv: str) -> str:
    return " ".join([sys.executable, "-m", "mnemo", *argv])


@pytest.fixture
def long_session(tmp_path) -> Path:
    """A home holding one session whose messages print as ~2 MB: far more than a pipe buffers."""
    home = tmp_path / "home"
    source = tmp_path / "long.jsonl"
    messages = [{"role": "user", "content": f"line {n} " + "word " * 800} for n in range(500)]
    source.write_text(json.dumps({"id": "long", "messages": messages}) + "\n")
    assert main(["--home", str(home), "sessions", "import", str(source)]) == 0
    return home


@pytest.mark.parametrize("json_flag", ["", "--json"])
def test_output_piped_into_head_ends_quietly_with_141(long_session, json_flag, capsys):
    capsys.readouterr()
    pipeline = f"set -o pipefail; {_cli('--home', str(long_session), 'sessions', 'show', 'long', json_flag)} | head -1"
    done = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, timeout=120)
    assert done.stdout.count("\n") == 1
    assert done.stderr == ""  # no traceback, no "Exception ignored"
    assert done.returncode == 141


def test_a_closed_pipe_under_a_table_ends_quietly(long_session):
    pipeline = f"{_cli('--home', str(long_session), 'sessions', 'search', 'word', '--limit', '50')} | head -1"
    done = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, timeout=120)
    assert done.stderr == "" and done.returncode in (0, 141)  # 0 where one large write outlives the reader


def test_a_reader_gone_before_anything_is_written_ends_quietly(long_session):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mnemo", "--home", str(long_session), "graph", "stats", "--json"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 141


# ------------------------------------------------------------------ --json on every command


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*path, name))
            return
    yield path, parser


def test_every_command_accepts_json():
    leaves = dict(_leaves(build_parser()))
    assert len(leaves) >= 20
    for path, parser in leaves.items():
        options = {option for action in parser._actions for option in action.option_strings}
        assert "--json" in options and "--home" in options, path


def _ok(run, *argv: str, home: Path | None = None) -> dict:
    code, out, err = run(*argv, "--json", home=home)
    assert code == 0, err
    document = json.loads(out)
    assert isinstance(document, dict) and document["success"] is True
    return document


def test_every_memory_command_prints_one_json_object(run):
    assert _ok(run, "memory", "add", "uses pytest")["entry_count"] == 1
    assert _ok(run, "memory", "replace", "pytest", "uses pytest -x")["entry_count"] == 1
    assert _ok(run, "memory", "add", "--target", "user", "Name: Ada")["target"] == "user"
    assert _ok(run, "memory", "show")["memory"]["entries"] == ["uses pytest -x"]
    assert "Name: Ada" in _ok(run, "memory", "snapshot", "--target", "user")["user"]
    assert _ok(run, "memory", "remove", "pytest")["entry_count"] == 0


def test_every_sessions_command_prints_one_json_object(run, tmp_path):
    source = tmp_path / "s.jsonl"
    source.write_text(json.dumps({"id": "s1", "messages": [{"role": "user", "content": "the pager fired"}]}) + "\n")
    assert _ok(run, "sessions", "import", str(source))["imported_sessions"] == ["s1"]
    assert _ok(run, "sessions", "list")["sessions"][0]["id"] == "s1"
    assert _ok(run, "sessions", "search", "pager")["count"] == 1
    assert _ok(run, "sessions", "show", "s1")["messages"][0]["content"] == "the pager fired"
    assert _ok(run, "sessions", "delete", "s1")["messages_removed"] == 1
    # --json may also stand between the group and its action
    code, out, _ = run("sessions", "--json", "list")
    assert code == 0 and json.loads(out)["count"] == 0


def test_every_graph_command_prints_one_json_object(run):
    first = _ok(run, "graph", "add", "Deploys are on Tuesdays")["memory"]["id"]
    second = _ok(run, "graph", "add", "Deploys are on Wednesdays", "--replaces", first)["memory"]["id"]
    third = _ok(run, "graph", "add", "QA signs off each deploy")["memory"]["id"]
    assert _ok(run, "graph", "relate", third, second, "related_to")["association"]["relation"] == "related_to"
    assert _ok(run, "graph", "recall", "deploy day")["count"] >= 1
    assert _ok(run, "graph", "show")["count"] == 2  # superseded versions only with --all
    assert _ok(run, "graph", "show", second)["memory"]["id"] == second
    assert _ok(run, "graph", "stats")["superseded"] == 1
    assert _ok(run, "graph", "embed")["graph"]["pending"] == 0
    export = _ok(run, "graph", "export")
    assert export["format"] == "mnemo-graph" and len(export["memories"]) == 3
    assert _ok(run, "graph", "export", "--format", "markdown")["markdown"].startswith("# Memory graph")
    assert _ok(run, "graph", "forget", third)["count"] == 1


def test_graph_export_json_pipes_into_import(run, tmp_path):
    _ok(run, "graph", "add", "Exported through a pipe")
    code, out, _ = run("graph", "export", "--json")
    assert code == 0
    document = tmp_path / "export.json"
    document.write_text(out)
    assert _ok(run, "graph", "import", str(document), home=tmp_path / "other")["added"] == 1


def test_demo_and_chat_print_json(run, tmp_path, monkeypatch):
    assert _ok(run, "demo", home=tmp_path / "demo-home")["memory_entries"]
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\nsecond\n"))
    with OpenAIServer([Reply.text("Hi."), Reply.text("Again.")]) as server:
        code, out, _ = run("chat", "--json", "--base-url", server.base_url, "--model", "m")
    assert code == 0
    turns = [json.loads(line) for line in out.splitlines()]
    assert [(t["success"], t["user"], t["reply"]) for t in turns] == [(True, "hello", "Hi."), (True, "second", "Again.")]


# ------------------------------------------------------------------ the documentation's commands


def _documented_commands() -> list[tuple[str, str]]:
    """``(page, form)`` for every ``mnemo ...`` form the README and the docs pages show."""
    found = []
    for page in DOCUMENTATION:
        found += [(page.relative_to(ROOT).as_posix(), form) for form in _commands_in(page.read_text(encoding="utf-8"))]
    return found


def _commands_in(text: str) -> list[str]:
    inline = re.findall(r"`(mnemo [^`]+)`", text)
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    fenced = [line.split("&&")[-1].strip() for block in blocks for line in block.splitlines() if "mnemo " in line]
    # A leading VAR=value sets the environment for the command; the command starts at `mnemo`.
    fenced = [re.sub(r"^(?:[A-Z_]+=\S*\s+)+", "", line) for line in fenced]
    fenced = [line for line in fenced if line.startswith("mnemo ")]  # not another program's command
    return inline + fenced


def test_every_cli_form_the_documentation_shows_exists():
    leaves = dict(_leaves(build_parser()))
    documented = _documented_commands()
    assert any(page == "README.md" and "demo" in form for page, form in documented)
    assert len({page for page, _ in documented}) >= 10  # the docs pages are read, not only the README
    root = {option for action in build_parser()._actions for option in action.option_strings}
    for page, form in documented:
        words = shlex.split(form)[1:]
        while words[0] in ("--home", "--json", "-v"):
            words = words[2:] if words[0] == "--home" else words[1:]
        if not re.fullmatch(r"[a-z]+", words[0]):  # the synopsis: `mnemo [--home DIR] ... COMMAND ...`
            assert set(re.findall(r"--?[a-z][a-z-]*", form)) <= root, f"{page} shows `{form}`"
            continue
        group, rest = words[0], words[1:]
        actions = rest[0].split("|") if rest and not rest[0].startswith(("-", "[")) else [None]
        options = set(re.findall(r"--[a-z][a-z-]*", " ".join(rest)))
        for action in actions:
            path = (group,) if action is None else (group, action)
            assert path in leaves, f"{page} shows `{form}`: there is no `mnemo {' '.join(path)}`"
            known = {option for a in leaves[path]._actions for option in a.option_strings}
            assert options <= known, f"{page} shows `{form}`: `mnemo {' '.join(path)}` has no {sorted(options - known)}"
