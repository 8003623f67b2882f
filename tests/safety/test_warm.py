"""The safety patterns are compiled in the background when a session opens, once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_opening_a_session_compiles_the_scan_and_fence_patterns_in_the_background(tmp_path):
    # A fresh interpreter: in this one the patterns were compiled long ago by other tests.
    script = textwrap.dedent(
        f"""
        import threading
        from mnemo import AgentMemory
        from mnemo.safety import errands, fence, rules
        with AgentMemory.open("s1", home={str(tmp_path)!r}, graph_embedder="none", archive_embedder="none"):
            warm = [t for t in threading.enumerate() if t.name == "mnemo-safety-preload"]
            for thread in warm:
                thread.join()
            cached = [f.cache_info().currsize for f in (rules.compiled, errands._compiled, fence._sanitizer)]
            print(cached)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[1, 1, 1]"
