"""attnviz's public functions from several threads at once: one computes while the others wait
(attnviz.serial.COMPUTING), so OpenBLAS is never entered by two threads at once; its threads
could otherwise spin forever waiting on each other (seen with a GGUF model's run beside
MiniLM's)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest

import attnviz
from attnviz.api import explain as explaining

from support import needs_model


@pytest.mark.slow
def test_a_second_thread_waits_while_the_first_computes(monkeypatch: pytest.MonkeyPatch) -> None:
    inside: list[str] = []
    release = threading.Event()
    original = explaining.explained

    def held(*args: Any, **kwargs: Any) -> Any:
        inside.append(threading.current_thread().name)
        if len(inside) == 1:
            assert release.wait(10)  # the first thread stays inside until released
        return original(*args, **kwargs)

    monkeypatch.setattr(explaining, "explained", held)
    threads = [
        threading.Thread(target=attnviz.explain, args=("I am good",), name=name)
        for name in ("first", "second")
    ]
    threads[0].start()
    while not inside:
        time.sleep(0.01)
    threads[1].start()
    time.sleep(0.3)  # time enough for the second to enter, were it not waiting
    assert inside == ["first"]
    release.set()
    for thread in threads:
        thread.join(10)
    assert inside == ["first", "second"]


def test_a_function_calling_another_goes_on_in_the_same_thread() -> None:
    """compare() calls explain() twice and page() draws: the lock is re-entrant."""
    from attnviz.serial import COMPUTING

    with COMPUTING:  # held by this thread already, as by an outer public function
        pair = attnviz.compare(
            "the cat sat because it was tired", "the cat sat because it was wide"
        )
        assert "<html" in attnviz.page(pair).html.lower()


@needs_model
@pytest.mark.slow
def test_threads_running_two_models_at_once_all_finish() -> None:
    code = """
import faulthandler, sys, threading
faulthandler.dump_traceback_later(150, exit=True)
import attnviz
models = [sys.argv[1], "minilm", None]
done = []
def run(i):
    shown = attnviz.explain("the animal didn't cross the street because it was too tired",
                            model=models[i % 3], focus="it")
    done.append(float(shown.trace.weights.sum()))
threads = [threading.Thread(target=run, args=(i,)) for i in range(12)]
[t.start() for t in threads]
[t.join() for t in threads]
print("DONE", len(done))
"""
    gguf = str(__import__("pathlib").Path(__file__).parent / "model" / "tiny_llama.gguf")
    result = subprocess.run(
        [sys.executable, "-c", code, gguf], capture_output=True, text=True, timeout=200
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DONE 12" in result.stdout
