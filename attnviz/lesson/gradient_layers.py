"""The gradient step's lesson for one layer, backwards: through W_O, ∂L/∂Z·Vᵀ, the softmax,
÷√d_k, ∂L/∂Q and ∂L/∂K, and the projections W_Q, W_K, W_V, each with its formula and a worked
example; attnviz.lesson.gradient_step writes the rest of the lesson around it."""

from __future__ import annotations

import math

import numpy as np

from attnviz.labels import subscript
from attnviz.lesson import gradient_examples as text
from attnviz.lesson.blocks import Blank, Heading, Matrix
from attnviz.lesson.gradient_writer import GradientWriter
from attnviz.train.one_step import LayerGradients


def write_layer(lesson: GradientWriter, grads: LayerGradients) -> None:
    """Layer ``grads.layer`` backwards, from ∂L/∂X_l to the gradients of its matrices; a
    layer whose output is not read (the pointer readout's last) starts at its scaled scores."""
    n = grads.layer
    lesson.blocks += [Blank(), Heading(f"Layer {n}, backwards", "section")]
    if np.any(grads.d_output):
        _through_w_o(lesson, grads)
        _through_values(lesson, grads)
        _through_softmax(lesson, grads)
    _through_scaling(lesson, grads)
    _through_scores(lesson, grads)
    _through_projections(lesson, grads)


def _through_w_o(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, n, h = lesson.step, grads.layer, subscript(grads.layer)
    lesson.open_step(f"Through W_O{h}: ∂L/∂Z{h} = ∂L/∂output{h}·W_O{h}ᵀ")
    rows = [i for i in range(len(step.words)) if np.any(grads.d_output[i])]
    source = (
        "∂L/∂X_L above"
        if n == step.shape.n_layers
        else f"what layer {n + 1} passed down, ∂L/∂X_{n}"
    )
    lesson.say(
        f"X_{n} = X_{n - 1} + Concat{h}·W_O{h}, so ∂L/∂output{h} is {source} "
        f"(non-zero in {len(rows)} of {len(step.words)} rows). With one head, Concat{h} is "
        f"Z{h}: ∂L/∂Z{h} = ∂L/∂output{h}·W_O{h}ᵀ, [{len(step.words)} × {step.shape.d_k}]. "
        f"In the row of {lesson.it!r}, its largest number, {step.d_model} products:"
    )
    w_o = step.parameters[f"W_O.{n}"]
    d_z = grads.d_z[0, step.focus]
    c = int(np.argmax(np.abs(d_z)))
    lesson.worked(
        f"∂L/∂z_{lesson.it}[{c + 1}] = {text.products(grads.d_output[step.focus], w_o[c], d_z[c])}"
    )
    lesson.row(d_z, f"∂L/∂Z{h}[{lesson.it}]", lesson.it, lesson.head_dims)
    r, m = np.unravel_index(np.argmax(np.abs(grads.d_w_o)), grads.d_w_o.shape)
    lesson.say(
        f"∂L/∂W_O{h} = Concat{h}ᵀ·∂L/∂output{h} [{step.shape.d_k} × {step.d_model}], a sum "
        f"over the rows; its largest entry:"
    )
    lesson.worked(
        f"∂L/∂W_O{h}[{r + 1}, {m + 1}] = "
        + text.products(grads.concat[rows, r], grads.d_output[rows, m], grads.d_w_o[r, m])
    )


def _through_values(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, h = lesson.step, subscript(grads.layer)
    lesson.open_step(f"∂L/∂weights{h} = ∂L/∂Z{h}·V{h}ᵀ")
    lesson.say(
        f"z_i = Σ_j w_ij·v_j, so ∂L/∂w_ij = ∂L/∂z_i · v_j: a weight matters as much as its "
        f"value vector points where the loss wants z_i to move. For {lesson.it!r} and "
        f"{lesson.referent!r}, {step.shape.d_k} products:"
    )
    d_z = grads.d_z[0, step.focus]
    lesson.worked(
        f"∂L/∂w_{lesson.it},{lesson.referent} = "
        + text.products(
            d_z, grads.v[0, step.referent], grads.d_weights[0, step.focus, step.referent]
        )
    )
    lesson.say(f"(And ∂L/∂V{h} = weights{h}ᵀ·∂L/∂Z{h}, which reaches W_V{h} below.)")


def _through_softmax(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, h = lesson.step, subscript(grads.layer)
    lesson.open_step(f"The softmax's backward step: ∂L/∂scaled{h} from ∂L/∂weights{h}")
    told = (
        ""
        if lesson.softmax_told
        else "Forward, the softmax normalises each row of scores into weights that sum to 1; "
        "it normalises no gradient. Its backward step, here, passes the gradient on: "
    )
    lesson.softmax_told = True
    lesson.say(
        f"{told}w = softmax(s) along each row, so ∂L/∂s_ij = w_ij·(∂L/∂w_ij − Σ_k "
        "w_ik·∂L/∂w_ik): raising one score raises its own weight and lowers the others of the "
        "row (they still sum to 1), hence the row's weighted mean subtracted, and each row of "
        f"∂L/∂s sums to 0. A weight near 0 passes almost nothing back. The row of {lesson.it!r}:"
    )
    i = step.focus
    w, g, s = grads.weights[0, i], grads.d_weights[0, i], grads.d_softmax[0, i]
    # A word to a row, w, ∂L/∂w and ∂L/∂s its columns: three columns always fit the page, and
    # no number is elided (this lesson has no export to hold what a table leaves out).
    lesson.show(
        Matrix(
            np.stack([w, g, s], axis=1),
            f"row {lesson.it!r}: w, ∂L/∂w, ∂L/∂s",
            lesson.words,
            ["w", "∂L/∂w", "∂L/∂s"],
            keep_row=step.referent,
        )  # fmt: skip
    )
    total, line = text.softmax_backward(w, g, step.referent, s[step.referent])
    lesson.say(f"The row's Σ_k w_k·∂L/∂w_k, then the entry of {lesson.referent!r}:")
    lesson.worked(f"Σ = {total}")
    lesson.worked(f"∂L/∂s_{lesson.it},{lesson.referent} = {line}")


def _through_scaling(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, h = lesson.step, subscript(grads.layer)
    root = math.sqrt(step.shape.d_k)
    lesson.open_step(f"Through ÷√d_k: ∂L/∂scores{h} = ∂L/∂scaled{h} / √{step.shape.d_k}")
    i, j = step.focus, step.referent
    if grads.d_readout is not None:
        lesson.say(
            f"Here ∂L/∂scaled{h} is the readout's ∂L/∂logits in the row of {lesson.it!r}"
            + (
                "; the softmax passes nothing back, as the layer's output is not read."
                if not np.any(grads.d_softmax)
                else ", plus the softmax's part."
            )
        )
    lesson.say(
        f"scaled = scores / √d_k, so the gradient is divided by √d_k = "
        f"√{step.shape.d_k} = {text.result(root)} on its way back too. In the row of "
        f"{lesson.it!r}:"
    )
    lesson.row(grads.d_scores[0, i], f"∂L/∂scores{h}[{lesson.it}]", lesson.it, lesson.words)
    lesson.worked(
        f"∂L/∂score_{lesson.it},{lesson.referent} = "
        + text.divided(grads.d_scaled[0, i, j], root, grads.d_scores[0, i, j])
    )


def _through_scores(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, h = lesson.step, subscript(grads.layer)
    lesson.open_step(f"∂L/∂Q{h} = ∂L/∂scores{h}·K{h} and ∂L/∂K{h} = ∂L/∂scores{h}ᵀ·Q{h}")
    i, j = step.focus, step.referent
    d_scores = grads.d_scores[0]
    lesson.say(
        f"score_ij = q_i·k_j, so ∂L/∂q_i = Σ_j ∂L/∂score_ij·k_j (a step against it moves q_i "
        "towards the keys whose scores should rise) and ∂L/∂k_j = Σ_i ∂L/∂score_ij·q_i. The "
        f"largest number of ∂L/∂q_{lesson.it}, {len(step.words)} products:"
    )
    d_q = grads.d_q[0, i]
    c = int(np.argmax(np.abs(d_q)))
    lesson.worked(
        f"∂L/∂q_{lesson.it}[{c + 1}] = {text.products(d_scores[i], grads.k[0, :, c], d_q[c])}"
    )
    lesson.row(d_q, f"∂L/∂Q{h}[{lesson.it}]", lesson.it, lesson.head_dims)
    rows = [r for r in range(len(step.words)) if d_scores[r, j] != 0]
    if not rows:  # e.g. a trained model's weights, exactly 0 or 1 in float64
        lesson.say(
            f"No score on {lesson.referent!r} has a gradient (∂L/∂score_ij is exactly 0 for "
            f"every word i, j = {lesson.referent!r}), so ∂L/∂k_{lesson.referent} = "
            "Σ_i ∂L/∂score_ij·q_i is 0 in every entry."
        )
        return
    d_k = grads.d_k[0, j]
    c = int(np.argmax(np.abs(d_k)))
    only = (
        f"; only the row of {lesson.it!r} has a gradient, so one product"
        if rows == [i]
        else f", {len(rows)} products"
    )
    lesson.say(f"The largest number of ∂L/∂k_{lesson.referent}{only}:")
    lesson.worked(
        f"∂L/∂k_{lesson.referent}[{c + 1}] = "
        + text.products(d_scores[rows, j], grads.q[0, rows, c], d_k[c])
    )


def _through_projections(lesson: GradientWriter, grads: LayerGradients) -> None:
    step, n, h = lesson.step, grads.layer, subscript(grads.layer)
    lesson.open_step(f"∂L/∂W_Q{h} = X_{n - 1}ᵀ·∂L/∂Q{h}, and the same for W_K{h}, W_V{h}")
    d_w = grads.d_w_q[0]
    r, c = np.unravel_index(np.argmax(np.abs(d_w)), d_w.shape)
    # The words whose ∂L/∂Q[i, c] is not 0 (every word, should none be: a sum of zeros).
    rows = [i for i in range(len(step.words)) if grads.d_q[0, i, c] != 0]
    rows = rows or list(range(len(step.words)))
    formula = (
        f"Q{h} = X_{n - 1}·W_Q{h}, so ∂L/∂W_Q{h} = X_{n - 1}ᵀ·∂L/∂Q{h} "
        f"[{step.d_model} × {step.shape.d_k}]: entry (r, c) is Σ_i X[i, r]·∂L/∂Q[i, c] over "
        "the words."
    )
    if not grads.d_q[0].any():  # e.g. a trained model's weights, exactly 0 or 1 in float64
        lesson.say(f"{formula} ∂L/∂Q{h} is 0 in every entry, so ∂L/∂W_Q{h} is too.")
    else:
        lesson.say(
            f"{formula} Its largest entry"
            + (
                f" (only the row of {lesson.it!r} of ∂L/∂Q{h} is non-zero: one product):"
                if rows == [step.focus]
                else f" ({len(rows)} products):"
            )
        )
        lesson.worked(
            f"∂L/∂W_Q{h}[{r + 1}, {c + 1}] = "
            + text.products(grads.x[rows, r], grads.d_q[0, rows, c], d_w[r, c])
        )
    lesson.say(
        f"Likewise ∂L/∂W_K{h} = X_{n - 1}ᵀ·∂L/∂K{h} and ∂L/∂W_V{h} = X_{n - 1}ᵀ·∂L/∂V{h}. "
        f"X_{n - 1} gets ∂L/∂Q{h}·W_Q{h}ᵀ + ∂L/∂K{h}·W_K{h}ᵀ + ∂L/∂V{h}·W_V{h}ᵀ, plus "
        f"∂L/∂X_{n} unchanged through the residual"
        + (
            f", and passes it down to layer {n - 1}."
            if n > 1
            else "; the rows of E and P the sentence uses get it as their gradient."
        )
    )
