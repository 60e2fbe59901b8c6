"""The lesson of one training step: the loss at "it", its gradient back through the readout and
every layer (W_O, ∂L/∂Z·Vᵀ, the softmax, ÷√d_k, Q and K, the projections), the update, and
where "it" looks before and after, as lesson blocks (attnviz/lesson/blocks.py) that the
terminal draws like the forward lesson.

Every number comes from attnviz.train.one_step's record; the worked examples' text from
attnviz.lesson.gradient_examples, which makes each hold by hand at the digits shown.
"""

from __future__ import annotations

import math

import numpy as np

from attnviz.labels import occurrence_labels, subscript
from attnviz.lesson import gradient_examples as text
from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Paragraph, Span, Worked
from attnviz.train.one_step import GradientStep, LayerGradients
from attnviz.train.tasks import Readout


class GradientLesson:
    """The blocks of one gradient step's lesson, written section by section."""

    def __init__(self, step: GradientStep) -> None:
        self.step = step
        self.blocks: list[Block] = []
        self.words = occurrence_labels(list(step.words))
        self.it = self.words[step.focus]
        self.referent = self.words[step.referent]
        self.choices = self.words if step.readout is Readout.POINTER else list(step.choices)
        self.dims = [str(i) for i in range(1, step.d_model + 1)]
        self.head_dims = [str(i) for i in range(1, step.shape.d_k + 1)]
        self.number = 0

    # -- writing ----------------------------------------------------------------------------------

    def say(self, *parts: str) -> None:
        self.blocks.append(Paragraph(tuple(Span(part) for part in parts)))

    def note(self, sentence: str) -> None:
        self.blocks.append(Paragraph((Span(sentence, "note"),)))

    def worked(self, line: str) -> None:
        self.blocks.append(Worked("gradient_step", line))

    def show(self, matrix: Matrix) -> None:
        self.blocks.append(matrix)

    def open_step(self, title: str) -> None:
        self.number += 1
        self.blocks += [Blank(), Heading(f"Step {self.number} · {title}", "step")]

    def row(self, values: np.ndarray, title: str, label: str, columns: list[str]) -> Matrix:
        """One row of numbers as a [1 × columns] table, keeping the largest one in view."""
        keep = int(np.argmax(np.abs(values)))
        if columns is self.words or columns is self.choices:
            keep = self.step.referent if columns is self.words else self.step.target
        return Matrix(values[np.newaxis], title, [label], columns, keep_column=keep)

    # -- the lesson -------------------------------------------------------------------------------

    def write(self) -> list[Block]:
        self.introduction()
        self.forward()
        self.readout()
        for layer in reversed(self.step.layers):
            self.layer(layer)
        self.update()
        self.closing()
        return self.blocks

    def introduction(self) -> None:
        step = self.step
        shape = step.shape
        self.blocks.append(Heading("attnviz · one training step, every number", "title"))
        self.say(f"Sentence: {' '.join(step.words)}  ({len(step.words)} words)")
        weights = (
            f"the initial weights of the coref model for seed {step.seed} (random, not yet trained)"
            if step.seed is not None
            else "the coref model's weights as given"
        )
        self.say(
            f"Model: d_model = {shape.d_model}, {shape.n_layers} layers of {shape.n_heads} head "
            f"(d_k = {shape.d_k}), attention only: X_l = X_l−1 + softmax(Q·Kᵀ/√d_k)·V·W_O. "
            f"Weights: {weights}."
        )
        if step.readout is Readout.POINTER:
            readout = (
                f"pointer: the last layer's scaled scores in the row of {self.it!r} are the "
                f"logits over the sentence's {len(step.words)} positions"
            )
        else:
            readout = (
                f"word: X_L[{self.it}]·W_U gives logits over the {len(step.choices)} nouns, "
                "as a language model names a word"
            )
        self.say(f"Readout: {readout}. The answer is {self.referent!r}.")
        self.say(
            "One step of plain gradient descent, W ← W − lr·∂L/∂W with lr = "
            f"{step.learning_rate:g} for every parameter. (Training uses Adam, which rescales "
            "each weight's step; plain descent is the one a reader can check by hand.) "
            "∂L/∂A is the gradient of the loss L with respect to A, the same shape as A."
        )
        self.say(
            "(A worked example's result is printed to 3 significant digits; its terms carry as "
            "many decimals as it takes for them to give that result by hand. Tables have "
            f"{text.TABLE_DECIMALS} decimals.)"
        )

    def forward(self) -> None:
        step = self.step
        self.open_step(f"Forward: where {self.it!r} looks, and the loss")
        rows = np.stack([step.focus_row(step.before, n) for n in range(1, step.shape.n_layers + 1)])
        labels = [f"layer {n}" for n in range(1, step.shape.n_layers + 1)]
        self.say(f"The weights in the row of {self.it!r}, in each layer (head 1):")
        self.show(
            Matrix(
                rows,
                f"weights[{self.it}]",
                labels,
                self.words,
                shade=True,
                row_sums=True,
                keep_column=step.referent,
            )  # fmt: skip
        )
        logits = np.stack([step.logits, step.probabilities])
        self.show(
            Matrix(
                logits,
                "logits and p = softmax(logits)",
                ["logits", "p"],
                self.choices,
                keep_column=step.target,
            )  # fmt: skip
        )
        p = float(step.probabilities[step.target])
        if step.readout is Readout.POINTER:
            last = step.shape.n_layers
            self.say(
                f"The logits are layer {last}'s scaled scores in the row of {self.it!r}, so p is "
                f"that layer's attention row itself: p({self.referent}) is the weight "
                f"{self.it!r} gives {self.referent!r}."
            )
        self.say(f"The loss is −ln of the probability of the answer, L = −ln p({self.referent}):")
        self.worked(f"L = {text.negative_log(p, step.loss)}")

    def readout(self) -> None:
        step = self.step
        self.open_step("Back through the readout: ∂L/∂logits = p − onehot(answer)")
        self.say(
            "For a softmax followed by −ln p(answer), ∂L/∂logit_j = p_j − 1 for the answer "
            "and p_j for every other choice: every wrong choice is pushed down by its "
            "probability, the answer up by what it lacks of 1."
        )
        self.show(self.row(step.d_logits, "∂L/∂logits", "∂L/∂ℓ", self.choices))
        p = step.probabilities
        self.worked(
            f"∂L/∂ℓ_{self.choices[step.target]} = {text.minus_target(p[step.target], True)}"
        )
        others = [j for j in np.argsort(-p) if j != step.target]
        top = int(others[0])
        self.worked(f"∂L/∂ℓ_{self.choices[top]} = {text.minus_target(p[top], False)}")
        if step.readout is Readout.POINTER:
            self.pointer_entry()
        else:
            self.word_readout()

    def pointer_entry(self) -> None:
        step = self.step
        last = step.layers[-1]
        self.say(
            f"These are ∂L/∂scaled{subscript(last.layer)} in the row of {self.it!r}: the "
            f"gradient enters layer {last.layer} at its scaled scores, after its softmax, and "
            "is 0 in every other row."
        )
        unread = [
            name for name, array in (("W_O", last.d_w_o), ("W_V", last.d_w_v)) if not np.any(array)
        ]
        if unread:
            names = " and ".join(f"{name}{subscript(last.layer)}" for name in unread)
            self.say(
                f"Layer {last.layer}'s output is never read by this readout, so {names} get a "
                "gradient of 0 in every entry, and the step leaves them as they are."
            )

    def word_readout(self) -> None:
        step = self.step
        assert step.d_output_focus is not None
        x_last = step.before.output[0, step.focus]
        w_u = step.parameters["W_U"]
        d_w_u = step.gradients["W_U"]
        target = step.target
        r = int(np.argmax(np.abs(d_w_u[:, target])))
        self.say(
            f"logits = X_L[{self.it}]·W_U, with X_L[{self.it}] the last layer's output at "
            f"{self.it!r} [1 × {step.d_model}] and W_U [{step.d_model} × {len(step.choices)}]. "
            f"So ∂L/∂W_U = X_L[{self.it}]ᵀ·∂L/∂logits [{step.d_model} × {len(step.choices)}], "
            f"one product per entry; the largest in the column of {self.referent!r}:"
        )
        self.worked(
            f"∂L/∂W_U[{r + 1}, {self.referent}] = "
            f"{text.products([x_last[r]], [step.d_logits[target]], d_w_u[r, target])}"
        )
        c = int(np.argmax(np.abs(step.d_output_focus)))
        self.say(
            f"And ∂L/∂X_L[{self.it}] = ∂L/∂logits·W_Uᵀ [1 × {step.d_model}]; X_L is read only "
            f"at {self.it!r}, so its other rows get 0. Its largest number, "
            f"{len(step.choices)} products:"
        )
        self.worked(
            f"∂L/∂X_L[{self.it}, {c + 1}] = "
            f"{text.products(step.d_logits, w_u[c], step.d_output_focus[c])}"
        )
        self.show(self.row(step.d_output_focus, f"∂L/∂X_L[{self.it}]", self.it, self.dims))

    # -- one layer --------------------------------------------------------------------------------

    def layer(self, grads: LayerGradients) -> None:
        n = grads.layer
        self.blocks += [Blank(), Heading(f"Layer {n}, backwards", "section")]
        if np.any(grads.d_output):
            self.through_w_o(grads)
            self.through_values(grads)
            self.through_softmax(grads)
        self.through_scaling(grads)
        self.through_scores(grads)
        self.through_projections(grads)

    def through_w_o(self, grads: LayerGradients) -> None:
        step, n, h = self.step, grads.layer, subscript(grads.layer)
        self.open_step(f"Through W_O{h}: ∂L/∂Z{h} = ∂L/∂output{h}·W_O{h}ᵀ")
        rows = [i for i in range(len(step.words)) if np.any(grads.d_output[i])]
        source = (
            "∂L/∂X_L above"
            if n == step.shape.n_layers
            else f"what layer {n + 1} passed down, ∂L/∂X_{n}"
        )
        self.say(
            f"X_{n} = X_{n - 1} + Concat{h}·W_O{h}, so ∂L/∂output{h} is {source} "
            f"(non-zero in {len(rows)} of {len(step.words)} rows). With one head, Concat{h} is "
            f"Z{h}: ∂L/∂Z{h} = ∂L/∂output{h}·W_O{h}ᵀ, [{len(step.words)} × {step.shape.d_k}]. "
            f"In the row of {self.it!r}, its largest number, {step.d_model} products:"
        )
        w_o = step.parameters[f"W_O.{n}"]
        d_z = grads.d_z[0, step.focus]
        c = int(np.argmax(np.abs(d_z)))
        self.worked(
            f"∂L/∂z_{self.it}[{c + 1}] = "
            f"{text.products(grads.d_output[step.focus], w_o[c], d_z[c])}"
        )
        self.show(self.row(d_z, f"∂L/∂Z{h}[{self.it}]", self.it, self.head_dims))
        r, m = np.unravel_index(np.argmax(np.abs(grads.d_w_o)), grads.d_w_o.shape)
        self.say(
            f"∂L/∂W_O{h} = Concat{h}ᵀ·∂L/∂output{h} [{step.shape.d_k} × {step.d_model}], a sum "
            f"over the rows; its largest entry:"
        )
        self.worked(
            f"∂L/∂W_O{h}[{r + 1}, {m + 1}] = "
            + text.products(grads.concat[rows, r], grads.d_output[rows, m], grads.d_w_o[r, m])
        )

    def through_values(self, grads: LayerGradients) -> None:
        step, h = self.step, subscript(grads.layer)
        self.open_step(f"∂L/∂weights{h} = ∂L/∂Z{h}·V{h}ᵀ")
        self.say(
            f"z_i = Σ_j w_ij·v_j, so ∂L/∂w_ij = ∂L/∂z_i · v_j: a weight matters as much as its "
            f"value vector points where the loss wants z_i to move. For {self.it!r} and "
            f"{self.referent!r}, {step.shape.d_k} products:"
        )
        d_z = grads.d_z[0, step.focus]
        self.worked(
            f"∂L/∂w_{self.it},{self.referent} = "
            + text.products(
                d_z, grads.v[0, step.referent], grads.d_weights[0, step.focus, step.referent]
            )
        )
        self.say(f"(And ∂L/∂V{h} = weights{h}ᵀ·∂L/∂Z{h}, which reaches W_V{h} below.)")

    def through_softmax(self, grads: LayerGradients) -> None:
        step, h = self.step, subscript(grads.layer)
        self.open_step(f"The softmax backwards: ∂L/∂scaled{h}")
        self.say(
            "w = softmax(s) along each row, so ∂L/∂s_ij = w_ij·(∂L/∂w_ij − Σ_k w_ik·∂L/∂w_ik): "
            "raising one score raises its own weight and lowers the others of the row (they "
            "still sum to 1), hence the row's weighted mean subtracted. A weight near 0 passes "
            f"almost nothing back. The row of {self.it!r}:"
        )
        i = step.focus
        w, g, s = grads.weights[0, i], grads.d_weights[0, i], grads.d_softmax[0, i]
        self.show(
            Matrix(
                np.stack([w, g, s]),
                f"row {self.it!r}: w, ∂L/∂w, ∂L/∂s",
                ["w", "∂L/∂w", "∂L/∂s"],
                self.words,
                keep_column=step.referent,
            )  # fmt: skip
        )
        total, line = text.softmax_backward(w, g, step.referent, s[step.referent])
        self.say(f"The row's Σ_k w_k·∂L/∂w_k, then the entry of {self.referent!r}:")
        self.worked(f"Σ = {total}")
        self.worked(f"∂L/∂s_{self.it},{self.referent} = {line}")

    def through_scaling(self, grads: LayerGradients) -> None:
        step, h = self.step, subscript(grads.layer)
        root = math.sqrt(step.shape.d_k)
        self.open_step(f"Through ÷√d_k: ∂L/∂scores{h} = ∂L/∂scaled{h} / √{step.shape.d_k}")
        i, j = step.focus, step.referent
        if grads.d_readout is not None:
            self.say(
                f"Here ∂L/∂scaled{h} is the readout's ∂L/∂logits in the row of {self.it!r}"
                + (
                    "; the softmax passes nothing back, as the layer's output is not read."
                    if not np.any(grads.d_softmax)
                    else ", plus the softmax's part."
                )
            )
        self.say(
            f"scaled = scores / √d_k, so the gradient is divided by √d_k = "
            f"√{step.shape.d_k} = {text.result(root)} on its way back too. In the row of "
            f"{self.it!r}:"
        )
        self.show(self.row(grads.d_scores[0, i], f"∂L/∂scores{h}[{self.it}]", self.it, self.words))
        self.worked(
            f"∂L/∂score_{self.it},{self.referent} = "
            + text.divided(grads.d_scaled[0, i, j], root, grads.d_scores[0, i, j])
        )

    def through_scores(self, grads: LayerGradients) -> None:
        step, h = self.step, subscript(grads.layer)
        self.open_step(f"∂L/∂Q{h} = ∂L/∂scores{h}·K{h} and ∂L/∂K{h} = ∂L/∂scores{h}ᵀ·Q{h}")
        i, j = step.focus, step.referent
        d_scores = grads.d_scores[0]
        self.say(
            f"score_ij = q_i·k_j, so ∂L/∂q_i = Σ_j ∂L/∂score_ij·k_j (a query moves towards the "
            "keys whose scores should rise) and ∂L/∂k_j = Σ_i ∂L/∂score_ij·q_i. The largest "
            f"number of ∂L/∂q_{self.it}, {len(step.words)} products:"
        )
        d_q = grads.d_q[0, i]
        c = int(np.argmax(np.abs(d_q)))
        self.worked(
            f"∂L/∂q_{self.it}[{c + 1}] = {text.products(d_scores[i], grads.k[0, :, c], d_q[c])}"
        )
        self.show(self.row(d_q, f"∂L/∂Q{h}[{self.it}]", self.it, self.head_dims))
        rows = [r for r in range(len(step.words)) if d_scores[r, j] != 0]
        d_k = grads.d_k[0, j]
        c = int(np.argmax(np.abs(d_k)))
        only = (
            f"; only the row of {self.it!r} has a gradient, so one product"
            if rows == [i]
            else f", {len(rows)} products"
        )
        self.say(f"The largest number of ∂L/∂k_{self.referent}{only}:")
        self.worked(
            f"∂L/∂k_{self.referent}[{c + 1}] = "
            + text.products(d_scores[rows, j], grads.q[0, rows, c], d_k[c])
        )

    def through_projections(self, grads: LayerGradients) -> None:
        step, n, h = self.step, grads.layer, subscript(grads.layer)
        self.open_step(f"∂L/∂W_Q{h} = X_{n - 1}ᵀ·∂L/∂Q{h}, and the same for W_K{h}, W_V{h}")
        d_w = grads.d_w_q[0]
        r, c = np.unravel_index(np.argmax(np.abs(d_w)), d_w.shape)
        rows = [i for i in range(len(step.words)) if grads.d_q[0, i, c] != 0]
        self.say(
            f"Q{h} = X_{n - 1}·W_Q{h}, so ∂L/∂W_Q{h} = X_{n - 1}ᵀ·∂L/∂Q{h} "
            f"[{step.d_model} × {step.shape.d_k}]: entry (r, c) is Σ_i X[i, r]·∂L/∂Q[i, c] over "
            f"the words. Its largest entry"
            + (
                f" (only the row of {self.it!r} of ∂L/∂Q{h} is non-zero: one product):"
                if rows == [step.focus]
                else f" ({len(rows)} products):"
            )
        )
        self.worked(
            f"∂L/∂W_Q{h}[{r + 1}, {c + 1}] = "
            + text.products(grads.x[rows, r], grads.d_q[0, rows, c], d_w[r, c])
        )
        self.say(
            f"Likewise ∂L/∂W_K{h} = X_{n - 1}ᵀ·∂L/∂K{h} and ∂L/∂W_V{h} = X_{n - 1}ᵀ·∂L/∂V{h}. "
            f"X_{n - 1} gets ∂L/∂Q{h}·W_Q{h}ᵀ + ∂L/∂K{h}·W_K{h}ᵀ + ∂L/∂V{h}·W_V{h}ᵀ, plus "
            f"∂L/∂X_{n} unchanged through the residual"
            + (
                f", and passes it down to layer {n - 1}."
                if n > 1
                else "; the rows of E and P the sentence uses get it as their gradient."
            )
        )

    # -- the update and after ----------------------------------------------------------------------

    def update(self) -> None:
        step = self.step
        self.open_step(f"The update: W ← W − {step.learning_rate:g}·∂L/∂W")
        keys = [key for key in step.parameters if key not in ("E", "P")] + ["E", "P"]
        sizes = np.array(
            [[np.abs(step.gradients[key]).max(), np.linalg.norm(step.gradients[key])]
             for key in keys]
        )  # fmt: skip
        self.say(
            "Every parameter moves against its gradient, by lr times it. The size of each "
            "gradient (‖·‖ is the root of the sum of squares):"
        )
        names = [_parameter_name(key) for key in keys]
        self.show(Matrix(sizes, "∂L/∂W", names, ["max |·|", "‖·‖"]))
        last = step.shape.n_layers
        key = f"W_Q.{last}"
        d_w = step.gradients[key][0]
        r, c = np.unravel_index(np.argmax(np.abs(d_w)), d_w.shape)
        old, new = step.parameters[key][0, r, c], step.updated[key][0, r, c]
        self.say(f"The entry of W_Q{subscript(last)} worked out above:")
        self.worked(
            f"W_Q{subscript(last)}[{r + 1}, {c + 1}] ← "
            + text.update(old, step.learning_rate, d_w[r, c], new)
        )

    def closing(self) -> None:
        step = self.step
        last = step.shape.n_layers
        self.open_step(f"After the step: where {self.it!r} looks")
        rows = np.stack([step.focus_row(step.before), step.focus_row(step.after)])
        self.show(
            Matrix(
                rows,
                f"layer {last}, weights[{self.it}]",
                ["before", "after"],
                self.words,
                shade=True,
                row_sums=True,
                keep_column=step.referent,
            )  # fmt: skip
        )
        before, after = step.referent_weight_before, step.referent_weight_after
        decimals = _telling_decimals(before, after)
        moved = "rose" if after > before else "fell" if after < before else "stayed"
        self.say(f"The loss went from {text.result(step.loss)} to {text.result(step.loss_after)}.")
        if step.readout is Readout.POINTER:
            self.say(
                f"With the pointer readout this weight is p({self.referent}) itself, so the "
                "loss after the step is"
            )
            self.worked(f"L = {text.negative_log(after, step.loss_after)}")
        else:
            self.say(
                "With a word readout the loss does not ask for this weight: it asks that "
                f"X_L[{self.it}] name {self.referent!r}, and the weight moves only as far as "
                f"looking at {self.referent!r} helps with that."
            )
        self.blocks.append(
            Paragraph(
                (
                    Span(
                        f"The weight of {self.referent!r} in the row of {self.it!r}, layer "
                        f"{last}: {text.fixed(before, decimals)} → {text.fixed(after, decimals)} "
                        f"({moved}).",
                        "bold",
                    ),
                )
            )
        )


def _parameter_name(key: str) -> str:
    """ "W_Q.2" -> "W_Q₂"; E, P and W_U as they are."""
    name, _, layer = key.partition(".")
    return name + (subscript(int(layer)) if layer else "")


def _telling_decimals(before: float, after: float) -> int:
    """Enough decimals to print both weights to 3 significant digits."""
    return max(text.result_decimals(before), text.result_decimals(after))


def gradient_step_lesson(step: GradientStep) -> list[Block]:
    """The lesson of ``step`` as blocks."""
    return GradientLesson(step).write()
