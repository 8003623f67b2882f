"""The package's front doors: ``import mnemo`` and ``mnemo --version`` load nothing heavy, and every public
name still resolves (lazily) for users and type checkers alike."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import mnemo
from mnemo.cli import main

HEAVY = ("numpy", "onnxruntime", "sqlite3", "pydantic", "openai", "rich")


def _loaded_after(code: str) -> list[str]:
    """The heavy top-level packages a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return [name for name in json.loads(out.splitlines()[-1]) if name in HEAVY]


def test_import_mnemo_loads_no_heavy_dependency():
    assert _loaded_after("import mnemo") == []


def test_every_public_name_resolves():
    for name in mnemo.__all__:
        assert getattr(mnemo, name) is not None, name


def test_from_import_works_for_a_lazily_resolved_name():
    namespace: dict[str, object] = {}
    exec("from mnemo import AgentMemory, scan", namespace)
    assert namespace["AgentMemory"].__name__ == "AgentMemory"
    assert callable(namespace["scan"])


def test_dir_lists_every_public_name():
    assert set(mnemo.__all__) <= set(dir(mnemo))


def test_an_unknown_name_is_an_attribute_error():
    try:
        mnemo.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_the_lazy_table_all_and_the_type_checking_imports_agree():
    tree = ast.parse(Path(mnemo.__file__).read_text(encoding="utf-8"))
    checked = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = {alias.name for node in ast.walk(checked) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert set(mnemo._MODULE_OF) == set(mnemo.__all__) == typed
    assert len(mnemo.__all__) == len(set(mnemo.__all__))


def test_version_prints_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mnemo {mnemo.__version__}"


def test_version_after_the_home_option_is_answered_too(capsys, tmp_path):
    assert main(["--home", str(tmp_path), "--version"]) == 0
    assert capsys.readouterr().out.strip() == f"mnemo {mnemo.__version__}"


def test_version_loads_no_subcommand_and_no_heavy_dependency():
    assert _loaded_after("from mnemo.cli import main\nmain(['--version'])") == []


def test_the_version_command_runs_as_a_whole_process():
    done = subprocess.run([sys.executable, "-m", "mnemo", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"mnemo {mnemo.__version__}"


def test_help_lists_version(capsys):
    try:
        main(["--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert "--version" in capsys.readouterr().out


def test_the_version_matches_the_distribution_metadata():
    from importlib.metadata import version

    assert version("mnemo-local") == mnemo.__version__  # the distribution's name; the package is mnemo


def test_a_subcommand_imports_only_its_own_module(tmp_path):
    code = f"from mnemo.cli import main\nmain(['--home', {str(tmp_path)!r}, '--json', 'graph', 'stats'])"
    probe = f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith('mnemo.cli.')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "['mnemo.cli._output', 'mnemo.cli._settings', 'mnemo.cli.graph']"


def test_help_still_lists_every_command(capsys):
    try:
        main(["--help"])
    except SystemExit:
        pass
    listed = capsys.readouterr().out
    assert all(command in listed for command in ("demo", "memory", "sessions", "graph", "chat"))
