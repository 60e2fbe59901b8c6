"""The ``attnviz`` command: a Typer app of thin commands (cli/commands.py) over the library.

``run()`` builds only the command being run: Typer turns every registered command's signature
into click parameters on each run, about 10 ms for all six, a twentieth of the start-up floor.
"""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import functools
import sys
from collections.abc import Callable
from importlib import import_module
from typing import Annotated, Any

import typer

from attnviz.cli.console import report
from attnviz.cli.environment import (
    StandardOutputClosed,
    StandardOutputFailed,
    completion_installed_safely,
    hold_standard_descriptors,
    quiet_standard_error,
    safe_surroundings,
    silence_standard_output,
)
from attnviz.cli.groups import command
from attnviz.errors import AttnvizError, ExitStatus, shortened
from attnviz.signals import Interrupted, stopping_signals_raise

#: Every command, by name: the module and function that run it (imported only for the command
#: being run, so that `attnviz explain` loads neither the trainer nor the head reports) and its
#: short help for ``attnviz --help``.
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "explain": ("commands", "explain", None),
    "heatmap": ("commands", "heatmap", "Save the attention weights as a heatmap image."),
    "page": ("commands", "page", "Save an interactive lesson page: one HTML file, offline."),
    "cross": (
        "commands",
        "cross",
        "Cross-attention: queries from TARGET, keys and values from SOURCE.",
    ),
    "heads": ("analyses", "heads", "Rank every (layer, head) by where the focus word looks."),
    "compare": (
        "analyses",
        "compare",
        "Where the focus word looks in two sentences, head by head.",
    ),
    "scaling": ("commands", "scaling", "Why ÷√d_k: the softmax with and without the scaling."),
    "demo": ("commands", "demo", None),
    "generate": (
        "generating",
        "generate",
        "Write text with a decoder, token by token: the KV cache and the sampling worked out.",
    ),
    "lens": (
        "generating",
        "lens",
        "The logit lens: what each layer would predict, read through the output layer.",
    ),
    "exercise": (
        "exercising",
        "exercise",
        "Questions from your sentence, one number each, checked and diagnosed.",
    ),
    "train": (
        "training",
        "train",
        "Train a tiny transformer live, in numpy, and say what it learned.",
    ),
}


def command_function(name: str) -> Callable[..., Any]:
    """The function behind command ``name`` (attnviz.cli.<module>.<function>), imported now."""
    module, function, _ = COMMANDS[name]
    found: Callable[..., Any] = getattr(import_module(f"attnviz.cli.{module}"), function)
    return found


def version_callback(value: bool) -> None:
    if value:
        import attnviz

        typer.echo(f"attnviz {attnviz.__version__}")
        raise typer.Exit()


def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", callback=version_callback, is_eager=True
        ),
    ] = False,
) -> None:
    """Every number of transformer multi-head self-attention, step by step.

    Z = softmax(Q·Kᵀ/√d_k)·V for each head, then the heads concatenated and projected by W_O.
    """


def build_app(only: str | None = None) -> typer.Typer:
    """The attnviz app with every command, or with only the command named ``only``."""
    app = typer.Typer(
        name="attnviz",
        help=(
            "Every number of transformer multi-head self-attention, step by step: "
            "Z = softmax(Q·Kᵀ/√d_k)·V per head, then Concat·W_O.\n\n"
            'Example: attnviz explain "I am good"'
        ),
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        # Plain help, as click prints it: Typer's Rich panels would import most of Rich and
        # cost `attnviz --help` a third more start-up time than the commands themselves need.
        rich_markup_mode=None,
    )
    app.callback()(main)
    for name, (_, _, short_help) in COMMANDS.items():
        if only is None or name == only:
            app.command(name, short_help=short_help)(command(command_function(name)))
    return app


@functools.cache
def _whole_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    """``attnviz.cli.app``, the whole app, for tests and documentation tools (CliRunner, help
    output); built when first asked for, so that running one command builds only that one,
    and kept: a test suite imports it from a hundred modules."""
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run(argv: list[str] | None = None) -> int:
    """Entry point of the ``attnviz`` command and ``python -m attnviz``; returns the exit code.

    Typer's own usage errors (a missing sentence, a misspelt option) are shown as one line, like
    attnviz's, instead of a framed panel. Ctrl-C gives 130 (ExitStatus.INTERRUPTED), SIGTERM
    143, SIGHUP 129 and every other stopping signal 128 + its number, after the files being
    written are cleaned up (attnviz.signals). A standard output that is full or closed gives
    one line and 5 (ExitStatus.CANNOT_WRITE), one whose reader stopped reading (| head) ends in
    silence and 141 (ExitStatus.PIPE_CLOSED); a standard error that cannot be written loses
    its messages but changes no exit status; see cli/environment.py for the other
    surroundings made safe. The console script is _attnviz_command.main, which also turns
    Ctrl-C while attnviz is imported into one line.
    """
    arguments = sys.argv[1:] if argv is None else argv
    hold_standard_descriptors()
    with quiet_standard_error():
        return _run(arguments)


def _run(arguments: list[str]) -> int:
    """``run``, its standard streams made safe: the command, and its exit code."""
    wanted = arguments[0] if arguments and arguments[0] in COMMANDS else None
    try:
        with (
            safe_surroundings(),
            stopping_signals_raise(ending=True),
            completion_installed_safely(arguments),
        ):
            status = build_app(wanted)(args=arguments, standalone_mode=False)
            sys.stdout.flush()  # a full disk is found here, not in Python's flush at exit
    except StandardOutputClosed:
        # The reader took what it wanted and closed the pipe (| head). Python's documented recipe
        # (the signal module's note on SIGPIPE): point standard output at /dev/null, so that the
        # flush at exit is quiet, and end without a word. Its status is the one a shell shows
        # for a tool that SIGPIPE ended, 128 + 13, which `set -o pipefail` sees like `yes | head`;
        # not the recipe's 1, which attnviz keeps for bugs (ExitStatus.ERROR).
        silence_standard_output()
        return int(ExitStatus.PIPE_CLOSED)
    except StandardOutputFailed as failure:
        silence_standard_output()
        report(
            f"Cannot write to standard output: {failure.reason}; send the output to a file or "
            "a pipe that can take it."
        )
        return int(ExitStatus.CANNOT_WRITE)
    except typer.TyperException as error:  # click's exceptions, as Typer vendors them
        if not arguments:
            typer.echo(error.format_message(), err=True)  # no arguments: the help, exit 2
        else:
            report(shortened(usage_sentence(error), arguments))  # never echo a page
        return int(ExitStatus.USAGE)
    except typer.Abort:
        return int(ExitStatus.INTERRUPTED)
    except KeyboardInterrupt:  # Ctrl-C outside a command's own handling: building the app
        status = ExitStatus.INTERRUPTED
    except Interrupted as stop:
        report(f"stopped by {stop.name}; any output not yet complete was left as it was.")
        return int(stop.exit_status)
    except AttnvizError as error:  # outside a command: --install-completion's home
        report(error.message)
        return int(error.exit_status)
    except MemoryError:  # numpy's array allocation failures are MemoryErrors too
        return out_of_memory()
    if status == ExitStatus.INTERRUPTED:  # Typer returns Ctrl-C's KeyboardInterrupt as 130
        report("stopped by Ctrl-C; any output not yet complete was left as it was.")
    return status if isinstance(status, int) else int(ExitStatus.SUCCESS)


#: Said when memory ran out, written as it is: importing anything to say it (Rich, for one)
#: could run out of memory again and end in a traceback.
OUT_OF_MEMORY = (
    "error: attnviz ran out of memory; any output not yet complete was left as it was. Try a "
    "shorter text, --layer N, fewer heads, a smaller d_model or a smaller file.\n"
)

#: Its exit code, named and computed before any work: ExitStatus.BAD_INPUT (3).
OUT_OF_MEMORY_STATUS = int(ExitStatus.BAD_INPUT)


def out_of_memory() -> int:
    """One plain line on stderr and exit 3, with no import and no new object beyond the write:
    what the line needs was made when this module was loaded."""
    try:
        sys.stdout.flush()
    except Exception:  # a full or closed standard output: the line matters more
        pass
    try:
        sys.stderr.write(OUT_OF_MEMORY)
        sys.stderr.flush()
    except Exception:  # no standard error, or a full one
        pass
    return OUT_OF_MEMORY_STATUS


def usage_sentence(error: typer.TyperException) -> str:
    """Typer's message for a malformed command line, with the way to fix it."""
    # Click lists a missing argument's choices one per line ("Choose from:\n\tcoref,\n\t…"):
    # one stderr line says them in a row.
    message = error.format_message().rstrip().replace(":\n\t", ": ").replace(",\n\t", ", ")
    if not message.endswith((".", "?", "!")):
        message += "."
    context = getattr(error, "ctx", None)
    command_path = context.command_path if context is not None else "attnviz"
    takes_a_sentence = command_path.endswith(("explain", "heatmap", "page"))
    if "unexpected extra argument" in message and takes_a_sentence:
        return f'{message} Put the sentence in quotes: {command_path} "I am good"'
    return f"{message} See '{command_path} --help'."
