"""mnemo's safety layer: what the threat scan catches on sources it never saw, and what it all costs.

Run: ``python bench/scan.py [--dev PATH] [--corpora DIR] [--threshold T] [--skip-detection]`` (several
minutes).

Detection: every source group of the development set (``../shared/data/injection/dev.jsonl``), of the examples
written for mnemo (``tests/safety/data/``) and of the pinned corpora found under ``--corpora``
(``scripts/scan_corpora.py``; missing ones are named and skipped) is held out in turn; the classifier is
retrained by ``scripts/train_scan.py``'s recipe on the trainable rest (shippable, not held back) and scores
the held-out group. Training texts that share 30% or more of their 8-word runs with the held-out group are
left out of that fold too, since collections copy each other (DAN prompts circulate in several). A text counts
as flagged when the patterns flag it or the held-out classifier's probability reaches the threshold. The sweep
over thresholds pools all groups; the default threshold is the lowest whose pooled false-positive rate is at
most 1%. Per-source and per-category tables also show the shipped model, which has seen the trainable groups
(so its numbers on them are not estimates of anything). A last table bounds what the features could reach: a
model fitted on every example, scored on the same ones at 1% false positives.

Speed: p50/p95 of scanning full 2,200-character entries and dev-set notes; the worst hostile input found;
``remember_many`` with scanning on against the same run with scanning off.

The last section times each operation against a baseline in the same run: NFKC normalisation plus
lower-casing of the same text for the scan; joining the same chunks for the scrubber. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import scan_corpora  # noqa: E402
import train_scan  # noqa: E402

from _tables import print_table  # noqa: E402
from mnemo.safety import ContextScrubber, build_memory_context_block, sanitize_context, scan  # noqa: E402
from mnemo.safety.classifier import Model, best_readings, load_model  # noqa: E402
from mnemo.safety.normalize import readings as scan_readings  # noqa: E402
from mnemo.safety.scan import DEFAULT_SCAN_THRESHOLD, SCAN_CHAR_LIMIT  # noqa: E402
from mnemo.storage import open_graph  # noqa: E402


def _median_seconds(function: Callable[[], object], *, budget: float = 0.4) -> float:
    """Median time of one call, repeating for about ``budget`` seconds (at least 5 runs)."""
    samples: list[float] = []
    deadline = time.perf_counter() + budget
    while len(samples) < 5 or time.perf_counter() < deadline:
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _row(label: str, chars: int, seconds: float, baseline: float | None = None) -> str:
    ratio = f"{seconds / baseline:6.1f}x" if baseline else "      "
    return f"{label:<56} {chars:>8,} {seconds * 1e6:>12,.1f} {ratio}"


SHORT_NOTE = "Project uses docker-compose; run `make test` before commit. Prod alias = 10.0.0.4."
ORDINARY = (
    "User prefers concise answers. Postgres on 5433. Deploy with `make release`; "
    "health: curl https://api.example.com/health. Key in ~/.ssh/config. "
)
HOSTILE_WORST_CASES = {
    "many tools then a credential path": "curl ." * 3_300 + " .env",
    "many tools then command substitutions": "curl $(" * 2_800,
    "many keygen then an append": "ssh-keygen " * 1_800 + ">>",
    "many netcat then a redirect": "nc " * 6_000 + "<",
    "many URLs with parameters": "https://a?b=" * 1_600,
    "many cues for an errand": "assistant, " * 1_900,
    "many cues, no sentence end": "assistant, quietly from now on " * 700,
}


def bench_scan() -> list[str]:
    curated = (ORDINARY * 20)[:2_200]
    large = (ORDINARY * 200)[:SCAN_CHAR_LIMIT]
    rows = []
    for label, text in (("short note", SHORT_NOTE), ("curated-size entry", curated), ("20k ordinary text", large)):
        floor = _median_seconds(lambda text=text: unicodedata.normalize("NFKC", text).lower())
        rows.append(_row(f"baseline NFKC+lower: {label}", len(text), floor))
        rows.append(_row(f"scan: {label}", len(text), _median_seconds(lambda text=text: scan(text)), floor))
    worst_label, worst_seconds, worst_chars = "", 0.0, 0
    for label, text in HOSTILE_WORST_CASES.items():
        seconds = _median_seconds(lambda text=text: scan(text), budget=0.2)
        if seconds > worst_seconds:
            worst_label, worst_seconds, worst_chars = label, seconds, min(len(text), SCAN_CHAR_LIMIT)
    rows.append(_row(f"scan worst hostile: {worst_label}", worst_chars, worst_seconds))
    huge = ORDINARY * 10_000
    rows.append(_row("scan: 1.4 MB text (capped at 20k)", len(huge), _median_seconds(lambda: scan(huge))))
    return rows


def bench_fence() -> list[str]:
    sections = [(f"provider-{n}", ("Recalled fact about the user. " * 20)) for n in range(4)]
    hostile = "fact </memory-context> <memory-context> " * 50
    return [
        _row("build block: 4 providers x 600 chars", 2_400, _median_seconds(lambda: build_memory_context_block(sections))),
        _row("sanitize: 2k chars full of fence tags", len(hostile), _median_seconds(lambda: sanitize_context(hostile))),
    ]


def bench_scrubber() -> list[str]:
    block = build_memory_context_block([("graph", "Prefers tea. " * 40)])
    text = ("The answer streams here. " * 40 + block) * 20
    chunks = [text[i : i + 16] for i in range(0, len(text), 16)]

    def scrub_stream() -> str:
        scrubber = ContextScrubber()
        return "".join(scrubber.feed(chunk) for chunk in chunks) + scrubber.flush()

    floor = _median_seconds(lambda: "".join(chunks))
    seconds = _median_seconds(scrub_stream)
    per_chunk = seconds / len(chunks)
    return [
        _row("baseline: join 16-char chunks", len(text), floor),
        _row("scrubber: stream in 16-char chunks", len(text), seconds, floor),
        f"{'  per chunk (us)':<56} {'':>8} {per_chunk * 1e6:>12,.2f}",
    ]


# --- detection -------------------------------------------------------------------------------------

SHOWN_THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
CANDIDATE_THRESHOLDS = tuple(round(0.5 + step / 100, 2) for step in range(50)) + (1.0,)
FP_TARGET = 0.01


@dataclass
class _Scored:
    example: train_scan.Example
    patterns: bool
    """Flagged by the patterns or the invisible-character check (the classifier off)."""
    held_out: float
    """Classifier probability from the model trained without this example's group."""
    shipped: float
    """Classifier probability from the shipped model (trained on this example if it is trainable)."""
    in_sample: float
    """Classifier probability from a model fitted on every example, this one and all untrainable ones included."""


NEAR_DUPLICATE = 0.3
"""Share of a training text's 8-word runs found in the held-out group that keeps it out of the fold."""


def _runs(text: str, width: int = 8) -> set[str]:
    words = train_scan.words(text)
    return {" ".join(words[start : start + width]) for start in range(max(1, len(words) - width + 1))}


def _score_all(examples: list[train_scan.Example]) -> list[_Scored]:
    """Every example, scored by patterns, its leave-one-group-out model and the shipped one."""
    readings = [scan_readings(example.text[:SCAN_CHAR_LIMIT]) for example in examples]
    runs = [_runs(example.text) for example in examples]
    shipped_model = load_model()
    held_out: dict[int, float] = {}
    groups = sorted({example.group for example in examples})
    print(f"leave-one-source-out: {len(groups)} folds ...", file=sys.stderr, flush=True)
    for group in groups:
        held_runs = set().union(*(runs[i] for i, example in enumerate(examples) if example.group == group))
        training = [
            example
            for index, example in enumerate(examples)
            if train_scan.trainable(example)
            and example.group != group
            and len(runs[index] & held_runs) < NEAR_DUPLICATE * len(runs[index])
        ]
        weights, bias = train_scan.fit(training)
        model = Model(*train_scan.quantise(weights), bias)
        members = [index for index, example in enumerate(examples) if example.group == group]
        best = best_readings([readings[index] for index in members], model)
        held_out.update((index, probability) for index, (probability, _) in zip(members, best, strict=True))
    shipped = best_readings(readings, shipped_model)
    weights, bias = train_scan.fit(examples)
    in_sample = best_readings(readings, Model(*train_scan.quantise(weights), bias))
    return [
        _Scored(
            example, bool(scan(example.text, threshold=1.0)), held_out[index], shipped[index][0], in_sample[index][0]
        )
        for index, example in enumerate(examples)
    ]


def _flagged(row: _Scored, threshold: float, *, shipped: bool = False) -> bool:
    probability = row.shipped if shipped else row.held_out
    return row.patterns or (threshold < 1.0 and probability >= threshold)


def _rate(rows: list[_Scored], threshold: float, *, shipped: bool = False) -> float:
    return sum(_flagged(row, threshold, shipped=shipped) for row in rows) / len(rows) if rows else 0.0


def _pooled(rows: list[_Scored], threshold: float) -> tuple[float, float]:
    """Held-out detection rate over attacks and false-positive rate over benign texts, all groups pooled."""
    attacks = [row for row in rows if row.example.attack]
    benign = [row for row in rows if not row.example.attack]
    return _rate(attacks, threshold), _rate(benign, threshold)


def detection_tables(rows: list[_Scored], threshold: float) -> dict[str, object]:
    """Print the detection tables; return the numbers for the JSON line."""
    sweep = [(candidate, *_pooled(rows, candidate)) for candidate in CANDIDATE_THRESHOLDS]
    chosen = min((t for t, _, f in sweep if f <= FP_TARGET), default=1.0)
    print_table(
        "Threshold sweep, leave-one-source-out (patterns OR classifier >= threshold; 1.0 = patterns only)",
        ["threshold", "detection (held out)", "false positives (held out)"],
        [
            (f"{t:.2f}{' (lowest with FP <= 1%)' if t == chosen else ''}", f"{d:.3f}", f"{f:.4f}")
            for t, d, f in sweep
            if t in SHOWN_THRESHOLDS or t == chosen
        ],
    )
    by_group: dict[tuple[str, bool], list[_Scored]] = {}
    for row in rows:
        by_group.setdefault((row.example.group, row.example.attack), []).append(row)
    group_rows = []
    for (group, attack), members in sorted(by_group.items(), key=lambda item: (not item[0][1], item[0][0])):
        example = members[0].example
        group_rows.append(
            (
                group,
                "attack" if attack else "benign",
                len(members),
                "yes" if train_scan.trainable(example) else "no (held back)" if example.held_back else "no (licence)",
                f"{_rate(members, 1.0):.3f}",
                f"{_rate(members, threshold):.3f}",
                f"{_rate(members, threshold, shipped=True):.3f}",
            )
        )
    print_table(
        f"Per source at threshold {threshold} (rate flagged: detection for attacks, false positives for benign)",
        ["source", "side", "n", "in shipped training", "patterns only", "held out", "shipped model"],
        group_rows,
    )
    by_category: dict[str, list[_Scored]] = {}
    for row in rows:
        if row.example.attack:
            by_category.setdefault(row.example.category, []).append(row)
    print_table(
        f"Attacks per category at threshold {threshold}",
        ["category", "n", "patterns only", "held out", "shipped model"],
        [
            (category, len(members), f"{_rate(members, 1.0):.3f}", f"{_rate(members, threshold):.3f}",
             f"{_rate(members, threshold, shipped=True):.3f}")
            for category, members in sorted(by_category.items())
        ],  # fmt: skip
    )
    detection, false_positives = _pooled(rows, threshold)
    return {
        "threshold": threshold,
        "threshold_chosen_by_sweep": chosen,
        "held_out_detection": round(detection, 4),
        "held_out_false_positives": round(false_positives, 4),
        "patterns_only_detection": round(_pooled(rows, 1.0)[0], 4),
        "patterns_only_false_positives": round(_pooled(rows, 1.0)[1], 4),
        "per_source_held_out": {
            f"{group}/{'attack' if attack else 'benign'}": round(_rate(members, threshold), 4)
            for (group, attack), members in sorted(by_group.items())
        },
    }


def _ceiling(rows: list[_Scored], *, patterns: bool) -> tuple[float, float]:
    """The in-sample model's lowest threshold whose pooled false positives stay within :data:`FP_TARGET`
    (with the patterns' own false positives counted when ``patterns``), and the pooled detection there."""
    benign = [row for row in rows if not row.example.attack]
    budget = int(FP_TARGET * len(benign)) - (sum(row.patterns for row in benign) if patterns else 0)
    scores = sorted((row.in_sample for row in benign if not (patterns and row.patterns)), reverse=True)
    threshold = math.nextafter(scores[budget], 1.0) if 0 <= budget < len(scores) else 0.0
    attacks = [row for row in rows if row.example.attack]
    caught = sum((patterns and row.patterns) or row.in_sample >= threshold for row in attacks)
    return threshold, caught / len(attacks)


def ceiling_table(rows: list[_Scored]) -> dict[str, float]:
    """Print what the features could reach at best: a model fitted on every example, scored on the same ones
    at 1% false positives. Not an estimate of anything; a bound on what more training data could bring."""
    alone, alone_rate = _ceiling(rows, patterns=False)
    combined, combined_rate = _ceiling(rows, patterns=True)
    by_group: dict[str, list[_Scored]] = {}
    for row in rows:
        if row.example.attack:
            by_group.setdefault(row.example.group, []).append(row)
    table = [
        (group, len(members),
         f"{sum(row.in_sample >= alone for row in members) / len(members):.3f}",
         f"{sum(row.patterns or row.in_sample >= combined for row in members) / len(members):.3f}")
        for group, members in sorted(by_group.items())
    ]  # fmt: skip
    table.append(("all attacks, pooled", sum(map(len, by_group.values())), f"{alone_rate:.3f}", f"{combined_rate:.3f}"))
    print_table(
        "Ceiling, in-sample: the classifier fitted on every example and scored on the same, at pooled false"
        " positives <= 1%",
        ["source", "n", "classifier alone", "patterns + classifier"],
        table,
    )
    return {"classifier": round(alone_rate, 4), "with_patterns": round(combined_rate, 4)}


# --- speed targets -------------------------------------------------------------------------------------


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _entry_p95(texts: list[str]) -> tuple[float, float]:
    """p50 and p95 seconds to scan each of ``texts`` (several passes)."""
    samples = []
    for _ in range(5):
        for text in texts:
            started = time.perf_counter()
            scan(text)
            samples.append(time.perf_counter() - started)
    return _percentile(samples, 0.5), _percentile(samples, 0.95)


def _remember_many_rate(notes: list[str], *, scanning: bool) -> float:
    """Memories per second written by ``remember_many`` (batches of 1,000) into a fresh graph."""
    from mnemo.graph import core as graph_core

    original = graph_core.scan_many
    if not scanning:
        graph_core.scan_many = lambda texts, threshold=None: [()] * len(texts)  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory() as directory:
            graph = open_graph(Path(directory) / "state.db")
            started = time.perf_counter()
            for begin in range(0, len(notes), 1_000):
                graph.remember_many([{"content": note} for note in notes[begin : begin + 1_000]])
            elapsed = time.perf_counter() - started
            graph.close()
    finally:
        graph_core.scan_many = original
    return len(notes) / elapsed


def speed_table(dev: list[train_scan.Example]) -> dict[str, float]:
    benign = [example.text for example in dev if not example.attack] + train_scan.load_written_benign()
    # Consecutive benign texts joined until they fill a curated store's 2,200 characters.
    full_entries, pending = [], ""
    for text in benign:
        pending = f"{pending} {text}".strip()
        if len(pending) >= 2_200:
            full_entries.append(pending[:2_200])
            pending = ""
    p50, p95 = _entry_p95(full_entries)
    short_p50, short_p95 = _entry_p95(benign[:400])
    worst_label, worst = "", 0.0
    for label, text in HOSTILE_WORST_CASES.items():
        seconds = max(_median_seconds(lambda text=text: scan(text), budget=0.2) for _ in range(2))
        if seconds > worst:
            worst_label, worst = label, seconds
    # Only notes the scan passes: a refused note would abort the batch it is in.
    clean = [text for text in benign if not scan(text)]
    notes = [f"{clean[i % len(clean)]} (note {i})" for i in range(6_000)]
    off = _remember_many_rate(notes, scanning=False)
    on = _remember_many_rate(notes, scanning=True)
    print_table(
        "Speed (this run; the machine is shared, so compare rows of one run)",
        ["measure", "value", "target"],
        [
            (f"full 2,200-char entry ({len(full_entries)} benign entries x5): p50 / p95 ms",
             f"{p50 * 1e3:.2f} / {p95 * 1e3:.2f}", "p95 <= 5"),
            (f"dev-set note ({min(400, len(benign))} notes x5): p50 / p95 ms",
             f"{short_p50 * 1e3:.3f} / {short_p95 * 1e3:.3f}", ""),
            (f"worst hostile input: {worst_label} (ms)", f"{worst * 1e3:.1f}", "<= 100"),
            ("remember_many, scanning off (memories/s)", f"{off:,.0f}", ""),
            ("remember_many, scanning on (memories/s)", f"{on:,.0f}", ">= 3,000"),
        ],  # fmt: skip
    )
    return {
        "entry_p50_ms": round(p50 * 1e3, 3),
        "entry_p95_ms": round(p95 * 1e3, 3),
        "note_p50_ms": round(short_p50 * 1e3, 3),
        "worst_hostile_ms": round(worst * 1e3, 2),
        "remember_many_per_s_scan_off": round(off),
        "remember_many_per_s_scan_on": round(on),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Threat scan: detection on held-out sources, and speed.")
    parser.add_argument("--dev", type=Path, default=train_scan.DEFAULT_DEV_SET, help="development set (dev.jsonl)")
    parser.add_argument("--corpora", type=Path, default=scan_corpora.DEFAULT_DIRECTORY, help="directory of clones")
    parser.add_argument("--threshold", type=float, default=DEFAULT_SCAN_THRESHOLD, help="classifier threshold")
    parser.add_argument("--skip-detection", action="store_true", help="speed only (no dev set needed)")
    args = parser.parse_args(argv)
    result: dict[str, object] = {}
    dev = train_scan.load_dev_set(args.dev) if not args.skip_detection else []
    if not args.skip_detection:
        absent = scan_corpora.missing(args.corpora)
        if absent:
            names = ", ".join(corpus.repo for corpus in absent)
            print(f"not measured (no clone under {args.corpora}): {names}", file=sys.stderr)
        rows = _score_all(train_scan.all_examples(args.dev, args.corpora))
        result["detection"] = detection_tables(rows, args.threshold)
        result["in_sample_ceiling"] = ceiling_table(rows)
    result["speed"] = speed_table(dev)
    header = f"{'operation':<56} {'chars':>8} {'median us':>12} {'vs base':>7}"
    print(header)
    print("-" * len(header))
    for row in (*bench_scan(), *bench_fence(), *bench_scrubber()):
        print(row)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
