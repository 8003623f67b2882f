"""The documentation site stays whole: every public name has its reference entry, and the README, read on its
own (on GitHub, or the package index), links only to pages and sections that exist.

The site's own links are checked by ``mkdocs build --strict`` (``nox -s docs``); these checks run in the main
test session, without MkDocs installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import mnemo

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"


def _referenced_names() -> set[str]:
    """Names given an API entry (``::: mnemo.Name``, mkdocstrings' syntax) on the reference pages."""
    names: set[str] = set()
    for page in REFERENCE.glob("*.md"):
        names |= set(re.findall(r"^::: mnemo\.(\w+)\s*$", page.read_text(encoding="utf-8"), flags=re.M))
    return names


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's table of contents gives a heading (and GitHub, for these headings)."""
    text = re.sub(r"[`*]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s-]+", "-", text).strip("-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # a "# comment" is no heading
    return {_slug(heading) for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def _readme_links() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    return [link for link in links if not re.match(r"[a-z]+:", link)]  # pages of this repository, not URLs


def test_every_public_name_has_an_api_reference_entry():
    missing = sorted(set(mnemo.__all__) - _referenced_names())
    assert not missing, f"no `::: mnemo.Name` entry in docs/reference/ for {missing}"


def test_the_api_reference_names_only_public_names():
    unknown = sorted(_referenced_names() - set(mnemo.__all__))
    assert not unknown, f"docs/reference/ documents names mnemo does not export: {unknown}"


def test_the_readme_links_only_to_pages_that_exist():
    links = _readme_links()
    assert len(links) >= 10
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README links to {link}: there is no {path}"
        if anchor:
            assert anchor in _anchors(target), f"README links to {link}: {path} has no section #{anchor}"


def test_the_readme_is_a_front_page():
    # The site holds the detail; the front page stays short enough to read (issue 34: at most ~15 KB).
    assert len((ROOT / "README.md").read_bytes()) <= 15_000


def test_every_docs_page_links_to_pages_that_exist():
    # What mkdocs' strict build checks, held here too so a page renamed in a test run is caught without MkDocs.
    for page in (ROOT / "docs").rglob("*.md"):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in re.findall(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)", text):
            target = (page.parent / link).resolve()
            generated = target.relative_to(REFERENCE.parent).as_posix() in GENERATED
            assert target.is_file() or generated, f"{page.relative_to(ROOT)} links to {link}, which does not exist"


# Pages scripts/docs_hooks.py writes at build time, from the code: they exist on the site, not in the tree.
GENERATED = {"reference/configuration.md", "reference/cli.md"}
