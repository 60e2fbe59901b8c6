"""The array type of every matrix in attnviz."""

from __future__ import annotations

import numpy as np

#: A float64 numpy array. Shapes are documented where each array is made or taken, with the
#: paper's dimension names: [n, d_model], [h, n, d_k], ...
FloatArray = np.ndarray
