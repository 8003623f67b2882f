"""The example on each integration's docs page runs as printed, offline."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"langgraph.md": "langmem", "openai_agents.md": "agents", "pydantic_ai.md": "pydantic_ai"}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_pages_example_runs(page: str, tmp_path: Path) -> None:
    if importlib.util.find_spec(PAGES[page]) is None:
        pytest.skip(f"needs {PAGES[page]}")
    text = (ROOT / "docs" / "integrations" / page).read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MNEMO_HOME": str(tmp_path / "unused")}
    done = subprocess.run([sys.executable, "-c", example], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
