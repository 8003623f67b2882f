"""``mnemo doctor``: check a mnemo home and say, one line per problem, how to fix it."""

from __future__ import annotations

import argparse

from ..doctor import Severity, diagnose
from ._output import lines, print_json


def _doctor(args: argparse.Namespace) -> int:
    report = diagnose(args.home)
    if args.json:
        print_json(report.as_dict())
    elif report.findings:
        lines(str(finding) for finding in report.findings)
    else:
        lines([f"ok: {report.home} passed {len(report.checks)} checks"])
    return 0 if report.ok else 1


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add ``mnemo doctor``."""
    parser = subparsers.add_parser(
        "doctor",
        parents=[common],
        help="check the home: files, permissions, database integrity and schema, disk space, pending work",
        description=(
            "Check a mnemo home without changing it and print one line per problem with its fix. "
            f"Exits 1 if any problem is an {Severity.ERROR.value}; {Severity.WARNING.value}s are shown but pass."
        ),
    )
    parser.set_defaults(handler=_doctor)
