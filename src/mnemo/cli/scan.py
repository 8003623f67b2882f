"""``mnemo scan [FILE|-] [--json]``: run the threat scan over a text, for operators checking notes or imports.

Exit status 0 when the text is clean, 1 when it is flagged, 2 for anything else (a missing or undecodable
file, a bad threshold or configuration). The findings name the layer, category and rule (and the
classifier's score) with a short excerpt: this is the operator's own terminal, not a model's context.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..config import load_settings
from ..errors import MnemoError
from ..safety.scan import SCAN_CHAR_LIMIT, Finding, check_threshold, scan
from ._output import CliError, print_json, print_table


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "scan",
        parents=[common],
        help="check a text with the threat scan (exit 1 when flagged)",
        description="Scan FILE (or standard input with '-' or no argument) with mnemo's threat scan. "
        "Exit status: 0 clean, 1 flagged, 2 the text could not be read.",
    )
    parser.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="text file to scan (default: stdin)")
    parser.add_argument(
        "--threshold", type=float, default=None, help="classifier threshold in (0, 1] (default: scan_threshold)"
    )
    parser.set_defaults(handler=_scan)


def _read(name: str) -> str:
    try:
        raw = sys.stdin.buffer.read() if name == "-" else open(name, "rb").read()  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}", code=2) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        source = "standard input" if name == "-" else name
        raise CliError(f"{source} is not valid UTF-8 (byte {exc.start})", code=2) from exc


def _as_dict(finding: Finding) -> dict[str, Any]:
    return {
        "category": finding.category,
        "rule": finding.rule,
        "layer": finding.layer,
        "via": finding.via,
        "score": finding.score,
        "excerpt": finding.excerpt,
    }


def _scan(args: argparse.Namespace) -> int:
    # Exit status 1 means "flagged", so every other failure exits 2.
    try:
        given = args.threshold if args.threshold is not None else load_settings(args.home).scan_threshold
        threshold = check_threshold(given)
    except MnemoError as exc:
        raise CliError(str(exc).splitlines()[0], code=2) from exc
    text = _read(args.file)
    findings = scan(text, threshold=threshold)
    if args.json:
        print_json(
            {
                "flagged": bool(findings),
                "threshold": threshold,
                "chars": len(text),
                "scanned_chars": min(len(text), SCAN_CHAR_LIMIT),
                "findings": [_as_dict(finding) for finding in findings],
            }
        )
    elif findings:
        rows = [{**_as_dict(f), "score": None if f.score is None else f"{f.score:.3f}"} for f in findings]
        print_table(rows, ["layer", "category", "rule", "score", "via", "excerpt"], title="flagged")
    else:
        print("clean: no findings")
    return 1 if findings else 0
