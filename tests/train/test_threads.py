"""Training runs numpy's products on one BLAS thread and gives the count back afterwards."""

from __future__ import annotations

import pytest

from attnviz.train.threads import _openblas, blas_threads, idle_blas_threads, one_blas_thread


def test_one_thread_inside_the_block_and_the_count_restored_after() -> None:
    found = _openblas()
    if found is None:
        pytest.skip("numpy here uses another BLAS than its bundled OpenBLAS")
    get, _ = found
    before = int(get())
    with one_blas_thread():
        assert int(get()) == 1
    assert int(get()) == before
    with pytest.raises(RuntimeError), one_blas_thread():
        raise RuntimeError
    assert int(get()) == before


@pytest.mark.parametrize(
    ("cores", "load", "threads"),
    [(2, 0.0, 2), (2, 0.4, 2), (2, 1.0, 2), (2, 1.01, 1), (2, 3.8, 1), (8, 2.5, 2), (1, 0.0, 1)],
)
def test_a_second_thread_only_when_the_load_leaves_a_core_idle(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, threads: int
) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert idle_blas_threads() == threads


def test_one_thread_when_the_load_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    def unknown() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unknown)
    assert idle_blas_threads() == 1


def test_blas_threads_sets_the_count_and_gives_it_back() -> None:
    found = _openblas()
    assert found is not None, "numpy here is built on its bundled OpenBLAS"
    get, _ = found
    before = int(get())
    with blas_threads(1):
        assert int(get()) == 1
    with blas_threads(before + 5):  # never more than OpenBLAS found cores for
        assert int(get()) == before
    assert int(get()) == before
