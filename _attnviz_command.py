"""The ``attnviz`` command's entry point, outside the attnviz package on purpose.

Importing any module of a package imports the package first, and importing attnviz (numpy,
Typer, the commands) is most of the command's start-up: Ctrl-C then would print a traceback of
15 to 30 lines. Here the import is inside the ``try``, so Ctrl-C at any moment of start-up ends
in one line and exit 130, as it does once a command runs (attnviz.cli.run).
"""

import sys

#: 128 + SIGINT, as shells report Ctrl-C (attnviz.errors.ExitStatus.INTERRUPTED).
INTERRUPTED = 130

#: Allocations between two collections of the garbage collector's youngest generation while a
#: command runs (Python's default is 700).
YOUNG_COLLECTION = 10_000


def main() -> int:
    """Run the ``attnviz`` command line; its exit code."""
    # A Ctrl-C inside a C extension's import (numpy's loads the datetime module) can come out as
    # an ImportError instead of KeyboardInterrupt: remember that it came, whatever is raised.
    pressed = []

    def ctrl_c(number: int, frame: object) -> None:
        pressed.append(number)
        raise KeyboardInterrupt

    try:
        # Inside the try: importing signal (and the enum module it needs) takes milliseconds.
        import gc
        import signal

        # Only Python's own handler is taken over: an ignored Ctrl-C (a background job) stays so.
        watched = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if watched:
            signal.signal(signal.SIGINT, ctrl_c)
        # The modules' objects (numpy's, Typer's, attnviz's: a few hundred thousand) live until
        # the process ends, yet the collector would walk them all again and again while they are
        # imported and once more as Python exits: about a quarter of `attnviz explain`'s time.
        # Collected never while they load, and set apart once loaded (gc.freeze), they are not.
        gc.disable()
        from attnviz.cli import run

        gc.freeze()
        # A command goes on importing as it runs (Rich, numpy.random, the lesson's modules): the
        # youngest generation is collected after YOUNG_COLLECTION allocations, not Python's 700,
        # so that those imports are not walked over and over either; a long run still collects.
        gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
        gc.enable()
        if pressed:  # pressed, and swallowed somewhere in an import: stop all the same
            raise KeyboardInterrupt
        if watched:  # attnviz.cli.run handles Ctrl-C from here
            signal.signal(signal.SIGINT, signal.default_int_handler)
        status = run()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run is over: Python is only exiting
        gc.freeze()  # what the run made is freed as Python exits, without a last walk over it
        end_process(status)  # returns only when the process cannot end here
        return status
    except BaseException as error:
        if not (pressed or isinstance(error, KeyboardInterrupt)):
            raise
        status = stopped()
        # Ended here too: Python can record a Ctrl-C as unhandled even once it was handled (seen
        # when it met an import's C code), and its own exit then ends the process by SIGINT.
        end_process(status)
        return status


def end_process(status: int) -> None:
    """End the process now, with exit code ``status``, doing what Python's own exit does for a
    command (flush standard output and error, run the atexit functions) but not freeing every
    module's objects one by one (numpy's, Rich's, attnviz's: 5 ms of `attnviz explain`).

    Returns, leaving the exit to Python, when another thread still runs (Python waits for it)
    or a standard stream cannot be flushed (Python reports that as it always has)."""
    import atexit
    import os

    threading = sys.modules.get("threading")
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None or (threading is not None and threading.active_count() > 1):
        return
    streams = [s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) if s is not None]
    try:
        for stream in streams:
            stream.flush()
    except (OSError, ValueError, AttributeError):
        return
    run_exit_functions()
    try:
        for stream in streams:  # what the atexit functions wrote
            stream.flush()
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(status)


def stopped() -> int:
    """Ctrl-C before the command could handle it: one line on stderr; the exit code, 130."""
    import signal

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
