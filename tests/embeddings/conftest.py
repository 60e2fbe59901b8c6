"""The embeddings tests' shared files."""

from __future__ import annotations

from pathlib import Path

import pytest

from .sample_files import every_format


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """The sample vocabulary in every format, in a fresh folder."""
    return every_format(tmp_path)
