"""Points 5 (load side), 6 and 14: the Hermes-compatible file format, and the round-trip property."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemo import ENTRY_DELIMITER, Add, Remove, load_settings
from mnemo.curated.files import MemoryFile
from mnemo.storage import open_curated

from .conftest import loaded, seed


def test_public_constants() -> None:
    from mnemo import DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT

    assert ENTRY_DELIMITER == "\n§\n"
    assert (DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT) == (2200, 1375)


def test_entry_with_a_lone_section_sign_is_one_entry(memories: Path) -> None:
    store = loaded(memories)
    store.apply("memory", Add("see § 4.2 of the spec"))
    store.apply("memory", Add("second"))
    assert loaded(memories).entries("memory") == ("see § 4.2 of the spec", "second")


def test_multi_line_entry_is_one_entry(memories: Path) -> None:
    store = loaded(memories)
    store.apply("memory", Add("deploy steps:\n1. build\n§ not a delimiter\n2. ship"))
    assert loaded(memories).entries("memory") == ("deploy steps:\n1. build\n§ not a delimiter\n2. ship",)


def test_entries_are_stripped_and_empty_pieces_dropped(memories: Path) -> None:
    (memories / "MEMORY.md").write_text("  one  \n§\n\n§\n   \n§\ntwo\n\n", encoding="utf-8")
    assert loaded(memories).entries("memory") == ("one", "two")


def test_utf8_bom_is_tolerated(memories: Path) -> None:
    (memories / "USER.md").write_bytes("\ufeffname is Ada\n§\nlikes tea".encode())
    assert loaded(memories).entries("user") == ("name is Ada", "likes tea")


def test_load_deduplicates_keeping_first_occurrences_in_order(memories: Path) -> None:
    seed(memories, "memory", "b", "a", "b", "c", "a")
    store = loaded(memories)
    assert store.entries("memory") == ("b", "a", "c")
    assert store.render_snapshot("memory").endswith("\nb\n§\na\n§\nc")


def test_add_of_a_new_entry_to_a_seeded_file_keeps_hermes_format(memories: Path) -> None:
    seed(memories, "memory", "one", "two")
    loaded(memories).apply("memory", Add("three"))
    assert (memories / "MEMORY.md").read_text(encoding="utf-8") == "one\n§\ntwo\n§\nthree"


def test_an_existing_hermes_home_loads_through_settings(tmp_path: Path) -> None:
    hermes = tmp_path / ".hermes"
    (hermes / "memories").mkdir(parents=True)
    seed(hermes / "memories", "memory", "User's repo is at ~/src/app", "Runs tests with `make check`")
    seed(hermes / "memories", "user", "Prefers terse answers")

    store = open_curated(load_settings(hermes, environ={}))
    store.load()
    store.apply("user", Add("Timezone: Europe/Berlin"))

    assert store.entries("memory") == ("User's repo is at ~/src/app", "Runs tests with `make check`")
    hermes_view = (hermes / "memories" / "USER.md").read_text(encoding="utf-8").split(ENTRY_DELIMITER)
    assert [piece.strip() for piece in hermes_view] == ["Prefers terse answers", "Timezone: Europe/Berlin"]


# Entries as a store accepts them: stripped, non-empty, distinct, and not able to merge with a
# neighbour's delimiter (a leading "§\n" or trailing "\n§" would, in Hermes' format as in ours).
_text = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")) | st.sampled_from("\n§"))
_entry = _text.map(str.strip).filter(
    lambda e: e and ENTRY_DELIMITER not in e and not e.startswith("§\n") and not e.endswith("\n§")
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(_entry, unique=True, max_size=12))
def test_any_entries_without_the_delimiter_round_trip_through_write_and_load(memories: Path, entries: list[str]) -> None:
    file = MemoryFile(memories / "MEMORY.md")
    with file.locked():
        file.write_text(ENTRY_DELIMITER.join(entries))
    assert loaded(memories).entries("memory") == tuple(entries)


def test_crlf_line_ends_are_tolerated(memories: Path) -> None:
    (memories / "MEMORY.md").write_bytes(b"saved on windows\r\n\xc2\xa7\r\nsecond line\r\n")
    store = loaded(memories)
    assert store.entries("memory") == ("saved on windows", "second line")
    store.apply("memory", Remove("second"))
    assert (memories / "MEMORY.md").read_bytes() == b"saved on windows"
