"""Which models generate, and the one-line refusals of those that cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnviz.errors import AttnvizError
from attnviz.generation.loading import load_decoder

from support import needs_model

MODELS = Path(__file__).resolve().parent.parent / "model"


def test_the_shipped_induction_decoder_loads_without_the_extra() -> None:
    loaded = load_decoder("induction")
    assert loaded.toy_config is not None and loaded.toy_config.causal
    assert loaded.decoder.n_layers == 2 and loaded.separator == " "
    assert loaded.pieces.tokens == loaded.toy_config.vocabulary


@pytest.mark.parametrize("model", ["coref", "coref-word"])
def test_a_model_that_answers_for_one_word_is_not_a_decoder(model: str) -> None:
    with pytest.raises(AttnvizError, match="is not a decoder: it reads a whole sentence"):
        load_decoder(model)


@needs_model
def test_an_encoder_is_refused_by_name() -> None:
    with pytest.raises(AttnvizError, match="which attnviz does not generate with"):
        load_decoder("minilm")


@needs_model
def test_a_folder_whose_output_layer_is_missing_is_refused(tmp_path: Path) -> None:
    import json
    import shutil

    folder = tmp_path / "untied"
    shutil.copytree(MODELS / "tiny_llama", folder)
    config = json.loads((folder / "config.json").read_text())
    config["tie_word_embeddings"] = False
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(AttnvizError, match="lacks lm_head.weight"):
        load_decoder(str(folder))


@needs_model
def test_a_test_models_random_weights_are_said() -> None:
    assert "whose weights are random, untrained" in load_decoder(str(MODELS / "tiny_gpt2")).family
    assert "random" not in load_decoder("induction").family


@needs_model
def test_a_tied_folder_unembeds_with_its_token_table() -> None:
    loaded = load_decoder(str(MODELS / "tiny_llama"))
    decoder = loaded.decoder
    assert decoder.unembedding is decoder.token_table  # type: ignore[attr-defined]


def test_an_unknown_dtype_is_refused() -> None:
    with pytest.raises(AttnvizError, match="float32 or float64"):
        load_decoder("induction", "float16")


@needs_model
def test_a_models_own_sliding_window_is_refused_not_run_as_full_attention(
    tmp_path: Path,
) -> None:
    import json
    import shutil

    from attnviz.cli import app
    from attnviz.errors import ExitStatus

    from support import CliRunner

    folder = tmp_path / "windowed"
    shutil.copytree(MODELS / "tiny_qwen2", folder)
    config = json.loads((folder / "config.json").read_text())
    config |= {"use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}
    del config["layer_types"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(AttnvizError, match="sliding window of 3 tokens in 1 of its 2 layers"):
        load_decoder(str(folder))
    result = CliRunner().invoke(app, ["generate", "I am good", "-m", str(folder)])
    assert result.exit_code == ExitStatus.BAD_INPUT, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "attnviz generate does not run" in lines[0], result.stderr
    assert not result.stdout


@needs_model
@pytest.mark.parametrize("model", ["tiny_llama", "tiny_llama.gguf", "tiny_gpt2"])
def test_the_tokenizer_is_handed_over_before_any_layer_is_read(
    monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """attnviz generate starts splitting the prompt then, in a child process, and reads the
    layers meanwhile; the split is the one encode_with_pieces gives."""
    from attnviz.model.families import llama
    from attnviz.model.sources.tokenizer import encode_with_pieces, start_encode_with_pieces

    events: list[str] = []
    load_layer = llama.load_layer

    def recorded(*args: object) -> object:
        events.append("layer")
        return load_layer(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(llama, "load_layer", recorded)
    readings = []

    def early(tokenizer: object, positions: int) -> None:
        events.append("tokenizer")
        readings.append(start_encode_with_pieces(tokenizer, "I am good", positions))

    loaded = load_decoder(str(MODELS / model), early=early)
    assert events[0] == "tokenizer" and events.count("tokenizer") == 1
    assert "layer" in events or model == "tiny_gpt2"
    encoding, pieces = readings[0].result()
    expected, expected_pieces = encode_with_pieces(
        loaded.tokenizer, "I am good", loaded.decoder.max_positions
    )
    assert encoding == expected and pieces == expected_pieces


def test_a_refused_prompt_is_raised_when_the_split_is_read() -> None:
    from attnviz.model.sources.tokenizer import start_encode_with_pieces

    # refused before any tokenizer is asked; raised where encode_with_pieces would raise it
    reading = start_encode_with_pieces(None, "a\udcffb", 64)
    with pytest.raises(AttnvizError, match=r"bytes that are not UTF-8 text \(\\xff\)"):
        reading.result()
