"""The lesson of one training step: the loss at "it", its gradient back through the readout and
every layer (W_O, ∂L/∂Z·Vᵀ, the softmax, ÷√d_k, Q and K, the projections), the update, and
where "it" looks before and after, as lesson blocks (attnviz/lesson/blocks.py) that the
terminal draws like the forward lesson.

Every number comes from attnviz.train.one_step's record; the worked examples' text from
attnviz.lesson.gradient_examples, which makes each hold by hand at the digits shown.
"""

from __future__ import annotations

import numpy as np

from attnviz.labels import subscript
from attnviz.lesson import gradient_examples as text
from attnviz.lesson.blocks import Block, Heading, Matrix, Paragraph, Span
from attnviz.lesson.gradient_layers import write_layer
from attnviz.lesson.gradient_writer import GradientWriter
from attnviz.train.one_step import GradientStep
from attnviz.train.tasks import Readout


class GradientLesson(GradientWriter):
    """The blocks of one gradient step's lesson, written section by section."""

    # -- the lesson -------------------------------------------------------------------------------

    def write(self) -> list[Block]:
        self.introduction()
        self.forward()
        self.readout()
        for layer in reversed(self.step.layers):
            write_layer(self, layer)
        self.update()
        self.closing()
        return self.blocks

    def introduction(self) -> None:
        step = self.step
        shape = step.shape
        self.blocks.append(Heading("attnviz · one training step, every number", "title"))
        self.say(f"Sentence: {' '.join(step.words)}  ({len(step.words)} words)")
        weights = (
            f"the coref model's initial weights for seed {step.seed}, the ones its training "
            "starts from (random, not yet trained)"
            if step.seed is not None
            else "the coref model's weights as given"
        )
        self.say(
            f"Model: d_model = {shape.d_model}, {shape.n_layers} layers of {shape.n_heads} head "
            f"(d_k = {shape.d_k}), attention only: X_0 = E[words] + P[:n] (token embeddings plus "
            "learned positions), then X_l = X_{l−1} + softmax(Q·Kᵀ/√d_k)·V·W_O in each layer. "
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
            "(Worked examples print their results to 3 decimals or more, so that small numbers "
            "keep 3 significant digits, and their terms with as many digits as it takes for "
            f"them to give that result by hand. Tables have {text.TABLE_DECIMALS} decimals.)"
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
        self.table(logits, "logits and p = softmax(logits)", ["logits", "p"], self.choices)
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
        self.row(step.d_logits, "∂L/∂logits", "∂L/∂ℓ", self.choices)
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
            f"readout's softmax of that row is layer {last.layer}'s own, and p − onehot(answer) "
            "is already the gradient through it, so the gradient enters layer "
            f"{last.layer} at its scaled scores, below its softmax, without passing through "
            f"the layer's weights·V, and is 0 in every other row."
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
        self.row(step.d_output_focus, f"∂L/∂X_L[{self.it}]", self.it, self.dims)

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
