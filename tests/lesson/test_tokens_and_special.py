"""What the lesson says of a model's special tokens, [UNK] pieces and pooling, checked against
the numbers and the sentence they stand beside; and --words' words, which are the sentence's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import app
from attnviz.lesson.tokens import unknown_sentence, unknown_texts
from attnviz.model.families.bert import pooling_about
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.selection import sentence_words

from support import CliRunner, needs_model, steps_spec

runner = CliRunner()
IT = "The animal didn't cross the street because it was too tired"
TINY_GPT2 = str(Path(__file__).resolve().parent.parent / "model" / "tiny_gpt2")


def provenance(sentence: str, words: tuple[str, ...], special: tuple[int, ...]) -> Provenance:
    origin = WeightsOrigin(WeightsKind.PRETRAINED, model="m")
    return Provenance(
        embeddings=EmbeddingsOrigin(EmbeddingsKind.MODEL),
        weights=origin,
        special=special,
        word_groups=tuple((i,) for i in range(len(words))),
        words=words,
        sentence=sentence,
    )


def test_words_that_touch_in_the_sentence_are_one_word() -> None:
    words = ("[CLS]", "The", "animal", "didn", "'", "t", "cross", "it", ".", "[SEP]")
    groups, merged = sentence_words(
        provenance("The animal didn't cross it.", words, (0, len(words) - 1))
    )
    assert merged == ("[CLS]", "The", "animal", "didn't", "cross", "it.", "[SEP]")
    assert groups == ((0,), (1,), (2,), (3, 4, 5), (6,), (7, 8), (9,))


def test_a_word_repeated_is_found_where_it_stands() -> None:
    words = ("a", "a", "'", "s", "a")
    _, merged = sentence_words(provenance("a a's a", words, ()))
    assert merged == ("a", "a's", "a")


def test_unknown_pieces_are_named_by_the_text_they_stand_for() -> None:
    words = ("[CLS]", "I", "[UNK]", "[UNK]", "and", "東", "京", "[SEP]")
    tokens = ("[CLS]", "i", "[UNK]", "[UNK]", "and", "東", "京", "[SEP]")
    prov = provenance("I ❤️ 🍕 and 東京", words, (0, 2, 3, 7))
    assert unknown_texts(prov, tokens) == ["❤️", "🍕"]
    assert "here '❤️' and '🍕'" in unknown_sentence(prov, tokens)
    # Two [UNK] in one space-less stretch: the stretch, whole.
    prov = provenance("I ❤️🍕", ("[CLS]", "I", "[UNK]", "[UNK]", "[SEP]"), (0, 2, 3, 4))
    assert unknown_texts(prov, ("[CLS]", "i", "[UNK]", "[UNK]", "[SEP]")) == ["❤️🍕"]
    assert unknown_sentence(prov, ("[CLS]", "i", "[SEP]")) == ""


def test_pooling_is_said_only_when_the_folder_says_it(tmp_path: Path) -> None:
    assert pooling_about(tmp_path) is None
    (tmp_path / "1_Pooling").mkdir()
    config = tmp_path / "1_Pooling" / "config.json"
    config.write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    assert "mean of the final vectors of all its pieces" in str(pooling_about(tmp_path))
    config.write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert "the final vector of [CLS]" in str(pooling_about(tmp_path))
    config.write_text("[1]")
    assert pooling_about(tmp_path) is None
    config.write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_max_tokens": 1}))
    assert "CLS pooling" in str(pooling_about(tmp_path))  # 1 is not true


def test_cross_help_offers_layer_for_an_export_only() -> None:
    result = runner.invoke(app, ["cross", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "With --model" not in result.stdout and "takes no --model" in result.stdout
    result = runner.invoke(app, ["explain", "--help"], env={"COLUMNS": "200"})
    assert "With --model: the layer to show" in result.stdout


def explain(*args: str) -> str:
    result = runner.invoke(app, ["explain", *args], env={"COLUMNS": "3000"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


SHARES = re.compile(
    r"give them (\S+) of their weight on average \(\[CLS\] (\S+), \[SEP\] (\S+)\)(: [^.]*)?\."
)


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize(("layer", "head"), [("1", "1"), ("3", "5"), ("6", "12")])
def test_minilm_names_where_the_parked_attention_goes(
    layer: str, head: str, tmp_path: Path
) -> None:
    export = tmp_path / "m.npz"
    output = explain("-m", "minilm", IT, "--layer", layer, "--head", head, "--export", str(export))
    with np.load(export, allow_pickle=False) as data:
        weights = data["weights"][int(layer) - 1]
    words = list(range(1, weights.shape[-1] - 1))  # every piece but [CLS] and [SEP]
    found = SHARES.findall(output)
    assert len(found) == 1
    for both, cls, sep, parked in found:
        row = weights[int(head) - 1]
        shares = {"[CLS]": row[words, 0].mean(), "[SEP]": row[words, -1].mean()}
        assert float(both) == pytest.approx(sum(shares.values()), abs=0.005)
        assert float(cls) == pytest.approx(shares["[CLS]"], abs=0.005)
        assert float(sep) == pytest.approx(shares["[SEP]"], abs=0.005)
        if parked:
            name = parked.split(" goes to ")[1].split(",")[0]
            other = "[SEP]" if name == "[CLS]" else "[CLS]"
            assert shares[name] >= 2 * shares[other] and shares[name] >= 0.1
        else:
            big, small = sorted(shares.values(), reverse=True)
            assert big < 0.1 or big < 2 * small
    assert "stands for the whole input" not in output
    assert "1_Pooling/config.json makes the sentence's one vector from the mean" in output


@needs_model
@pytest.mark.slow
def test_minilm_says_what_unk_is_and_which_text_became_it() -> None:
    output = explain("-m", "minilm", "I ❤️ 🍕 and 東京", "--steps", steps_spec("tokens"))
    assert "[UNK] is the tokenizer's unknown piece" in output
    assert "here '❤️' and '🍕'" in output
    assert "[UNK] is" not in explain("-m", "minilm", IT, "--steps", steps_spec("tokens"))


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize(("model", "pieces"), [("minilm", 15), (TINY_GPT2, 28)])
def test_words_counts_the_sentences_words(model: str, pieces: int) -> None:
    output = explain("-m", model, IT, "--words", "--steps", steps_spec("tokens"))
    assert f"({pieces} word pieces, shown as 11 words" in output.splitlines()[2]
    assert re.search(r"^didn't\s", output, re.MULTILINE)


def test_no_pooling_sentence_without_a_folder_that_says_it() -> None:
    assert "1_Pooling" not in explain(IT, "--steps", steps_spec("tokens"))


@pytest.mark.slow
def test_a_gpt2_folder_whose_tokenizer_adds_a_token_says_so(tmp_path: Path) -> None:
    """GPT-2's tokenizer adds no special tokens, but a folder's post-processor can: the tokens
    step then names the one it adds instead of saying "with no special tokens"."""
    pytest.importorskip("tokenizers", reason="needs the optional extra attnviz[model]")
    import shutil

    folder = tmp_path / "with_bos"
    shutil.copytree(Path(__file__).resolve().parents[1] / "model" / "tiny_gpt2", folder)
    path = folder / "tokenizer.json"
    tokenizer = json.loads(path.read_text(encoding="utf-8"))
    end = next(t for t in tokenizer["added_tokens"] if "endoftext" in t["content"])
    name = end["content"]
    sentence = {"Sequence": {"id": "A", "type_id": 0}}
    tokenizer["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": name, "type_id": 0}}, sentence],
        "pair": [sentence],
        "special_tokens": {name: {"id": name, "ids": [end["id"]], "tokens": [name]}},
    }
    path.write_text(json.dumps(tokenizer), encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "explain",
            "I am a cat",
            "-m",
            str(folder),
            "--layer",
            "1",
            "--steps",
            steps_spec("tokens"),
        ],
    )
    flat = " ".join(result.stdout.split())
    assert result.exit_code == 0, result.output
    assert "with no special tokens" not in flat
    assert "and this folder's tokenizer adds <|endoftext|>" in flat
