"""attnviz.train: what each task learns, reproducibly, and every sentence it prints checked
against the numbers of the model it describes."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from attnviz.api import train as training
from attnviz.errors import AttnvizError
from attnviz.labels import percent
from attnviz.train import network, report
from attnviz.train.tasks import Readout


@pytest.fixture(scope="module")
def coref() -> training.Trained:
    return training.train("coref")


@pytest.fixture(scope="module")
def coref_word() -> training.Trained:
    return training.train("coref", readout="word")


def last_rows(trained: training.Trained) -> list[np.ndarray]:
    """Each probe's focus row in every layer (head 1), recomputed from the parameters."""
    rows = []
    for probe in trained.task.probes:
        ids = np.array([[trained.task.vocabulary.index(w) for w in probe.words]])
        run = network.forward(trained.parameters, trained.shape, ids, np.array([probe.focus]))
        rows.append(np.stack([p.weights[0, 0, probe.focus] for p in run.layers]))
    return rows


@pytest.mark.slow
def test_coref_finds_animal_and_street_from_the_adjective(coref: training.Trained) -> None:
    assert coref.findings.accuracy >= 0.99
    tired, wide = last_rows(coref)
    assert tired[-1, 1] >= 0.9  # "animal"
    assert wide[-1, 5] >= 0.9  # "street"
    assert coref.steps <= 200


@pytest.mark.slow
def test_the_same_arguments_give_the_same_numbers() -> None:
    first, second = training.train("reverse", seed=3), training.train("reverse", seed=3)
    assert first.steps == second.steps
    for key, value in first.parameters.items():
        assert np.array_equal(value, second.parameters[key]), key
    assert [s.loss for s in first.snapshots] == [s.loss for s in second.snapshots]
    assert training.train("reverse", seed=4).snapshots[1].loss != first.snapshots[1].loss


@pytest.mark.slow
@pytest.mark.parametrize("task", ["reverse", "previous"])
def test_the_token_tasks_learn_their_pattern(task: str) -> None:
    trained = training.train(task)
    assert trained.findings.accuracy >= 0.99
    (pattern,) = trained.findings.patterns
    assert pattern.score > 0.9, pattern


@pytest.mark.slow
def test_induction_learns_a_previous_token_head_then_an_induction_head() -> None:
    trained = training.train("induction")
    scores = {(p.layer, p.name): p.score for p in trained.findings.patterns}
    assert trained.findings.accuracy >= 0.99
    assert scores[(1, "previous-token")] > 0.5 and scores[(2, "induction")] > 0.8


@pytest.mark.slow
def test_each_probe_sentence_states_the_weights_of_the_model(coref: training.Trained) -> None:
    lines = report.finish(coref.task, coref.findings, steps=coref.steps, seconds=coref.seconds)
    rows = last_rows(coref)
    for probe, row in zip(coref.task.probes, rows, strict=True):
        start = lines.index(" ".join(probe.words))
        for layer in range(row.shape[0]):
            line = lines[start + 1 + layer]
            said = re.match(r'  layer (\d): "it" gives "([^"]+)" (\d\.\d\d) \(its most\)', line)
            assert said is not None, line
            assert int(said[1]) == layer + 1
            top = int(row[layer].argmax())
            assert said[2] == probe.words[top] and float(said[3]) == round(
                float(row[layer, top]), 2
            )
            answer = re.search(r', "(\w+)" (\d\.\d\d)$', line)
            if top != probe.answer:
                assert answer is not None and float(answer[2]) == round(row[layer, probe.answer], 2)
    accuracy = re.search(r"held-out accuracy ([\d.]+)%", lines[0])
    assert accuracy is not None and float(accuracy[1]) == pytest.approx(
        100 * coref.findings.accuracy, abs=0.051
    )


@pytest.mark.slow
def test_the_path_sentence_follows_the_ablation_numbers(coref: training.Trained) -> None:
    at_it, at_nouns = coref.findings.ablations
    # Recomputed here: layer 1's output zeroed at the nouns of every held-out sentence.
    held = coref.task.held_out
    nouns = np.isin(held.ids, [coref.task.vocabulary.index(w) for w in ("animal", "street")])
    assert nouns.sum() >= len(held.ids) // 8  # the seeds' nouns appear in many sentences
    lines = report.finish(coref.task, coref.findings, steps=coref.steps, seconds=coref.seconds)
    path = next(line for line in lines if line.startswith("Where does the last layer need"))
    assert percent(at_it.accuracy) in path and percent(at_nouns.accuracy) in path
    verdict = lines[lines.index(path) + 2]
    cost_it = coref.findings.accuracy - at_it.accuracy
    cost_nouns = coref.findings.accuracy - at_nouns.accuracy
    points = f'({100 * cost_nouns:.1f} points at the nouns, {100 * cost_it:.1f} points at "it")'
    if max(cost_it, cost_nouns) < 0.05:
        assert verdict.startswith("Neither costs much")
    elif cost_nouns >= 2 * cost_it:
        assert (
            verdict
            == f'The last layer needs layer 1\'s output at the nouns more than at "it" {points}.'
        )
    elif cost_it >= 2 * cost_nouns:
        assert (
            verdict
            == f'The last layer needs layer 1\'s output at "it" more than at the nouns {points}.'
        )
    else:
        assert verdict.startswith("Both carry part of it") and points in verdict
    # Only what the zeroing shows: no path read into the weights.
    assert not any("that path carries it" in line or "second-hand" in line for line in lines)


@pytest.mark.slow
def test_an_untrained_model_gets_no_verdict_and_no_moral() -> None:
    """Two steps in, the answers are wrong: nothing is concluded from zeroing, and the
    right-answer lesson is not told."""
    early = training.train("coref", readout="word", steps=2, until=None)
    assert early.findings.accuracy < 0.5
    lines = report.finish(early.task, early.findings, steps=2, seconds=0.0)
    assert any("has not learned the task yet" in line for line in lines)
    assert not any(line.startswith("Right answer") for line in lines)
    assert not any("second-hand" in line for line in lines)


@pytest.mark.slow
def test_the_word_readout_is_right_while_its_attention_looks_elsewhere(
    coref_word: training.Trained,
) -> None:
    """The lesson: 99% right, yet the last layer's row of "it" is not on the referent."""
    assert coref_word.findings.accuracy >= 0.99
    assert coref_word.task.readout is Readout.WORD
    lines = report.finish(
        coref_word.task, coref_word.findings, steps=coref_word.steps, seconds=coref_word.seconds
    )
    for found, row in zip(coref_word.findings.probes, last_rows(coref_word), strict=True):
        assert found.correct
        landed = int(row[-1].argmax())
        if landed == found.probe.answer:
            assert found.relay is None
            continue
        assert found.relay is not None and found.relay.position == landed
        word = found.probe.words[landed]
        assert any(f'lands on "{word}"' in line for line in lines)
    if any(found.relay for found in coref_word.findings.probes):
        assert lines[-1].startswith("Right answer, attention elsewhere")


def test_bad_settings_are_refused_in_the_apis_words() -> None:
    with pytest.raises(AttnvizError, match=r'^readout="word" is for coref'):
        training.train("reverse", readout="word")
    with pytest.raises(AttnvizError, match=r"^steps=0: give 1 to 20,000 steps"):
        training.train("coref", steps=0)
    with pytest.raises(AttnvizError, match=r"^until=1.5: give a held-out accuracy"):
        training.train("coref", until=1.5)
    with pytest.raises(AttnvizError, match="There is no task 'translate'; choose one of coref"):
        training.train("translate")


@pytest.mark.slow
def test_the_history_and_the_model_folder_are_written_and_read_back(
    coref: training.Trained, tmp_path: pytest.TempPathFactory
) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    coref.save(folder / "model")
    coref.save_history(folder / "history.npz")
    with np.load(folder / "history.npz", allow_pickle=False) as history:
        assert history["step"].tolist() == list(range(coref.steps + 1))
        assert history["probe1_rows"].shape == (coref.steps + 1, 2, 1, 11)
        assert " ".join(history["probe1_words"].tolist()).endswith("too tired")
    with np.load(folder / "model" / "weights.npz", allow_pickle=False) as weights:
        for key, value in coref.parameters.items():
            assert np.array_equal(weights[key], value), key


@pytest.mark.slow
def test_without_history_the_same_steps_give_the_same_weights() -> None:
    full = training.train("previous", steps=12, until=None)
    quick = training.train("previous", steps=12, until=None, history=False)
    assert len(full.snapshots) == 13 and len(quick.snapshots) == 2
    assert quick.steps == full.steps == 12
    for key, value in full.parameters.items():
        assert np.array_equal(value, quick.parameters[key]), key
    assert quick.findings.accuracy == full.findings.accuracy


#: Steps of the word readout in a fresh process, after two to start and one measurement of the
#: held-out accuracy (which makes arrays of its own): the page faults that three more cost,
#: with the accuracy after them. Kept freed, a step faults in a few pages; handed back, about
#: 3,000 each and the accuracy 6,000 (measured 2026-11-28), so three steps tell the two apart
#: as clearly as twenty did.
STEPS = """
import resource
from attnviz.train.loop import Trainer
from attnviz.train.tasks import Readout, coref
trainer = Trainer(coref(Readout.WORD), seed=0)
for _ in range(2):
    trainer.step()
trainer.accuracy()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    trainer.step()
trainer.accuracy()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 3)
"""


@pytest.mark.slow
def test_training_steps_reuse_the_pages_of_the_last_step() -> None:
    """A step of 128 sentences makes and frees arrays of a few MB; handed back to the system
    each time, every step would fault them in anew (975 pages a step measured, a third
    of the command's time). In a process of its own, as earlier tests leave freed memory."""
    from attnviz.model import memory

    if not memory._is_glibc() or memory._tuned_by_the_user():
        pytest.skip("glibc's own thresholds, not set by the user")
    result = subprocess.run(
        [sys.executable, "-c", STEPS], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) < 200, result.stdout
