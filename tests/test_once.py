"""mnemo._once: a costly constant is built once per process, whichever thread asks first."""

from __future__ import annotations

import threading
import time

import pytest

from mnemo._once import once


def test_concurrent_first_callers_share_one_build():
    builds = []

    @once
    def patterns():
        builds.append(threading.current_thread().name)
        time.sleep(0.05)  # long enough for every other caller to arrive while it builds
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(patterns())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1
    assert len({id(result) for result in results}) == 1


def test_a_build_that_raises_is_tried_again_by_the_next_call():
    attempts = []

    @once
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first try fails")
        return "built"

    with pytest.raises(RuntimeError):
        flaky()
    assert flaky() == "built"
    assert flaky() == "built"
    assert len(attempts) == 2
