"""Training runs numpy's products on one BLAS thread and gives the count back afterwards."""

from __future__ import annotations

import pytest

from attnviz.train.threads import _openblas, one_blas_thread


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
