"""The ``attnviz`` command's entry point, outside the attnviz package on purpose.

Importing any module of a package imports the package first, and importing attnviz (numpy,
Typer, the commands) is most of the command's start-up: Ctrl-C then would print a traceback of
15 to 30 lines. Here the import is inside the ``try``, so Ctrl-C at any moment of start-up ends
in one line and exit 130, as it does once a command runs (attnviz.cli.run).
"""

import sys

#: 128 + SIGINT, as shells report Ctrl-C (attnviz.errors.ExitStatus.INTERRUPTED).
INTERRUPTED = 130


def main() -> int:
    """Run the ``attnviz`` command line; its exit code."""
    import signal

    try:
        from attnviz.cli import run

        status = run()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run is over: Python is only exiting
        return status
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while this is said
        try:
            sys.stderr.write(
                "error: stopped by Ctrl-C; any output not yet complete was left as it was.\n"
            )
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):  # no standard error, or a full one
            pass
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
