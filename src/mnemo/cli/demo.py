"""``mnemo demo``: two sessions of a scripted agent on a real home, printed step by step."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ..config import resolve_home
from ..demo import DemoReport, run_demo
from ._output import print_json


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "demo",
        parents=[common],
        help="run two sessions of a scripted agent (offline) and show what it remembered",
        description="Run two sessions of a scripted agent on the home directory (use a throwaway one) "
        "and show what it saved, the frozen snapshot in session two, and the fenced per-turn context.",
    )
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    report = run_demo(resolve_home(args.home))
    if args.json:
        print_json(asdict(report))
    else:
        _show(report)
    return 0


def _show(report: DemoReport) -> None:
    from rich.console import Console
    from rich.rule import Rule

    console = Console(highlight=False)
    session = None
    for turn in report.turns:
        if turn.session != session:
            session = turn.session
            console.print(Rule(f"session {session}"))
        console.print(f"[bold]user[/bold]  {turn.user}", markup=True)
        for tool in turn.tools:
            result = tool["result"]
            verdict = "ok" if result.get("success") else f"refused: {result.get('error')}"
            arguments = ", ".join(f"{k}={v!r}" for k, v in tool["arguments"].items())
            console.print(f"  [dim]tool[/dim]  {tool['name']}({arguments}) -> {verdict}", markup=True)
        console.print(f"[bold]agent[/bold] {turn.reply}\n", markup=True)
    console.print(Rule("what was saved (curated files)"))
    for target, entries in (("MEMORY.md", report.memory_entries), ("USER.md", report.user_entries)):
        console.print(f"[bold]{target}[/bold]", markup=True)
        for entry in entries:
            console.print(f"  - {entry}", markup=False)
    console.print(Rule("session 2: frozen system-prompt snapshot"))
    console.print(report.session_two_system_prompt or "(empty)", markup=False)
    console.print(Rule("session 2: fenced context a provider added to the user message"))
    console.print(report.session_two_context or "(none)", markup=False)
    console.print(f"\nhome: {report.home}", markup=False)
