"""Adam (Kingma and Ba, 2015): each parameter moves by its gradient's running mean divided by
the root of its running mean square, so every weight takes steps of about the learning rate
whatever the scale of its gradient."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from attnviz.arrays import FloatArray


@dataclass
class Adam:
    learning_rate: float
    beta1: float = 0.9  # how long the mean of gradients remembers
    beta2: float = 0.999  # how long the mean of squared gradients remembers
    epsilon: float = 1e-8
    # Steps over which the learning rate falls to 1/√2 of its start: lr_t = lr / √(1 + t/decay),
    # the inverse-square-root decay of "Attention Is All You Need" §5.3 (there after a warm-up).
    # None: a constant learning rate.
    decay: float | None = None
    steps: int = 0
    _first: dict[str, FloatArray] = field(default_factory=dict)
    _second: dict[str, FloatArray] = field(default_factory=dict)

    def step(
        self, parameters: Mapping[str, FloatArray], gradients: Mapping[str, FloatArray]
    ) -> dict[str, FloatArray]:
        """The parameters after one step (new arrays; the ones given are left as they were).

        m ← β1·m + (1 − β1)·g,  v ← β2·v + (1 − β2)·g²,
        θ ← θ − lr_t · m̂ / (√v̂ + ε)  with m̂ = m / (1 − β1ᵗ), v̂ = v / (1 − β2ᵗ),
        lr_t = lr, or lr / √(1 + (t − 1)/decay) with a decay.
        """
        self.steps += 1
        t = self.steps
        rate = self.learning_rate
        if self.decay is not None:
            rate = self.learning_rate / math.sqrt(1 + (t - 1) / self.decay)
        updated = {}
        for key, value in parameters.items():
            gradient = gradients[key]
            first = self._first.get(key, np.zeros_like(value))
            second = self._second.get(key, np.zeros_like(value))
            first = self.beta1 * first + (1 - self.beta1) * gradient
            second = self.beta2 * second + (1 - self.beta2) * gradient**2
            self._first[key], self._second[key] = first, second
            corrected = first / (1 - self.beta1**t)
            spread = np.sqrt(second / (1 - self.beta2**t)) + self.epsilon
            updated[key] = value - rate * corrected / spread
        return updated
