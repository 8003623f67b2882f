"""Running a support script as a process of its own, the way a second run of an application starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_module(module: str, *args: str, timeout: float = 180) -> Any:
    """``python -m module args`` with this checkout's ``src`` and ``tests`` first on the path; what it
    printed, as JSON. A failed run fails the test with its stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-m", module, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
