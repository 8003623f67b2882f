"""``mnemo demo``: two sessions of a scripted agent on a real home, printed step by step."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from ..config import resolve_home
from ..demo import DemoReport, run_demo
from ._output import CliError, console, print_json


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "demo",
        parents=[common],
        help="run two sessions of a scripted agent (offline) and show what it remembered",
        description="Run two sessions of a scripted agent on the home directory (use a throwaway one) "
        "and show what it saved, the frozen snapshot in session two, and the fenced per-turn context.",
    )
    parser.add_argument("--force", action="store_true", help="run on a home that is not empty (adds the demo's made-up profile to it)")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    home = resolve_home(args.home)
    held = sorted(entry.name for entry in home.iterdir()) if home.is_dir() else []
    if held and not args.force:
        shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise CliError(
            f"home {home} is not empty ({shown}); the demo would add a made-up user profile to it. "
            'Run it on a new home (mnemo --home "$(mktemp -d)" demo) or add --force'
        )
    home.mkdir(parents=True, exist_ok=True)  # fails here, with its reason, on a home that cannot be created
    report = run_demo(home)
    if args.json:
        print_json(asdict(report))
    else:
        _show(report)
    return 0


def _show(report: DemoReport) -> None:
    from rich.rule import Rule

    out = console(highlight=False)
    session = None
    for turn in report.turns:
        if turn.session != session:
            session = turn.session
            out.print(Rule(f"session {session}"))
        out.print(f"[bold]user[/bold]  {turn.user}", markup=True)
        for tool in turn.tools:
            result = tool["result"]
            if not result.get("success"):
                verdict = f"refused: {result.get('error')}"
            else:
                verdict = "held for review" if result.get("status") == "awaiting_review" else "ok"
            arguments = ", ".join(f"{k}={v!r}" for k, v in tool["arguments"].items())
            out.print(f"  [dim]tool[/dim]  {tool['name']}({arguments}) -> {verdict}", markup=True)
        out.print(f"[bold]agent[/bold] {turn.reply}\n", markup=True)
    out.print(Rule("what was saved (curated files)"))
    for target, entries in (("MEMORY.md", report.memory_entries), ("USER.md", report.user_entries)):
        out.print(f"[bold]{target}[/bold]", markup=True)
        for entry in entries:
            out.print(f"  - {entry}", markup=False)
    out.print(Rule("session 2: frozen system-prompt snapshot"))
    out.print(report.session_two_system_prompt or "(empty)", markup=False)
    out.print(Rule("session 2: fenced context a provider added to the user message"))
    out.print(report.session_two_context or "(none)", markup=False)
    out.print(f"\nhome: {report.home}", markup=False)
