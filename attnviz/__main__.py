"""``python -m attnviz``: the same as the ``attnviz`` command."""

from attnviz.cli import run

if __name__ == "__main__":
    raise SystemExit(run())
