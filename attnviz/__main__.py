"""``python -m attnviz``: the same as the ``attnviz`` command, Ctrl-C included.

``-m`` imports the attnviz package before this module runs, outside any handler of attnviz's;
its ``__init__`` imports nothing of attnviz for that reason too, so a Ctrl-C there (a window of
well under a millisecond) is the only one left to Python's traceback. Once this module runs,
Ctrl-C at any moment is one line and exit 130, as with the console script."""

import sys

if __name__ == "__main__":
    try:
        from _attnviz_command import main

        status = main()
    except KeyboardInterrupt:  # while the entry point itself was imported
        from _attnviz_command import stopped

        status = stopped()
    sys.exit(status)
