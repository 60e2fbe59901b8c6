"""The Python API: trace_attention's inputs and the errors it gives instead of bad numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError
from attnviz.provenance import EmbeddingsKind

SAMPLES = Path(__file__).resolve().parent.parent / "sample_embeddings"


def test_sentence_or_tokens_give_the_same_trace() -> None:
    from_text = attnviz.trace_attention("I am good.")
    from_tokens = attnviz.trace_attention(["I", "am", "good", "."])
    assert from_text.tokens == from_tokens.tokens
    np.testing.assert_array_equal(from_text.weights, from_tokens.weights)


def test_sizes_follow_the_files_unless_a_config_is_given() -> None:
    trace = attnviz.trace_attention("I am good", embeddings=SAMPLES / "toy8d.txt")
    embeddings = trace.provenance.embeddings
    assert trace.d_model == 8 and embeddings.kind is EmbeddingsKind.FILE and embeddings.vocabulary
    assert embeddings.describe().startswith("word vectors from")
    with pytest.raises(AttnvizError, match="8 dimensions but d_model is 16"):
        attnviz.trace_attention(
            "I am good", embeddings=SAMPLES / "toy8d.txt", config=AttentionConfig(d_model=16)
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"embeddings": np.full((3, 8), np.nan)}, "NaN or infinity"),
        ({"embeddings": np.ones((2, 8))}, r"must be \[3, 8\]"),
        ({"embeddings": SAMPLES / "toy8d.txt", "oov": "bogus"}, "'error' or 'random'"),
    ],
)
def test_bad_api_input_raises_attnviz_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(AttnvizError, match=message):
        attnviz.trace_attention("I am good", **kwargs)  # type: ignore[arg-type]


def test_oov_random_through_the_api() -> None:
    trace = attnviz.trace_attention("I am zorbly", embeddings=SAMPLES / "toy8d.txt", oov="random")
    assert trace.X.shape == (3, 8) and np.isfinite(trace.X).all()
