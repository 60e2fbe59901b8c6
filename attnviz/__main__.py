"""``python -m attnviz``: the same as the ``attnviz`` command, Ctrl-C included."""

from _attnviz_command import main

if __name__ == "__main__":
    raise SystemExit(main())
