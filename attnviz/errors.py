"""One exception type for every problem a person can fix, and the exit codes the CLI uses."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit codes of the ``attnviz`` command, named so tests and scripts can rely on them."""

    SUCCESS = 0
    ERROR = 1  # an unexpected failure: a bug, please report it
    USAGE = 2  # the command line itself is malformed (Typer's own code for this)
    BAD_INPUT = 3  # a sentence, size or option value that attnviz cannot use
    BAD_FILE = 4  # a file that is missing, unreadable, corrupt or of the wrong shape
    CANNOT_WRITE = 5  # an output path that cannot be written
    HUNG_UP = 129  # SIGHUP: the terminal closed (128 + 1, as shells report it)
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
    TERMINATED = 143  # SIGTERM: kill, a service manager, a CI timeout (128 + 15)


class AttnvizError(Exception):
    """A problem with the user's input, carrying the one sentence that tells them how to fix it.

    ``str(error)`` is that sentence; ``error.exit_status`` is the exit code the CLI uses.
    """

    def __init__(self, message: str, exit_status: ExitStatus = ExitStatus.BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_status = exit_status


class FileProblem(AttnvizError):
    """An input file that is missing, unreadable, corrupt or holds the wrong shapes."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitStatus.BAD_FILE)


class OutputProblem(AttnvizError):
    """An output path that cannot be written (missing folder, no permission, unknown extension)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ExitStatus.CANNOT_WRITE)
