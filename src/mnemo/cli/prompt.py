"""``mnemo prompt``: the system prompt a new session would get, block by block, with each block's size.

A user should see exactly what the model sees: the frozen curated blocks and the memory graph's bulletin,
assembled by :meth:`mnemo.AgentMemory.prompt_blocks`, the same call a session makes. No maintenance pass is
started for the preview (a session that finds one due runs it first, so its bulletin may differ after it).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..agent import AgentMemory
from ._output import lines, print_json, print_table
from ._settings import settings_for


def _prompt(args: argparse.Namespace) -> int:
    settings = settings_for(args, maintenance_interval_hours=0, archive_enabled=False)
    memory = AgentMemory(settings=settings)
    try:
        memory.start_session("mnemo-prompt")
        blocks = memory.prompt_blocks()
        prompt = memory.system_prompt()
    finally:
        memory.close()
    if args.json:
        print_json({
            "prompt": prompt, "chars": len(prompt),
            "blocks": [{"name": name, "chars": len(text), "text": text} for name, text in blocks],
        })  # fmt: skip
        return 0
    print_table([{"block": name, "chars": f"{len(text):,}"} for name, text in blocks] +
                [{"block": "total", "chars": f"{len(prompt):,}"}], ["block", "chars"], title="system prompt")  # fmt: skip
    lines(["", prompt] if prompt else ["(empty: no curated memory and nothing for the bulletin)"])
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo prompt``."""
    prompt = subparsers.add_parser("prompt", parents=[common], help="print the system prompt a new session would get")
    prompt.set_defaults(handler=_prompt)
