"""The ``attnseq`` command line: one module per command, each holding its help, its arguments
(``add_arguments(parser)``) and its handler (``run(args)``) side by side. A handler imports what
it needs when it runs, so building the parser stays light (no torch, no attnseq.train).

User errors print one line and exit with status 2: a UserError, a wrong argument, an
operating-system error a user causes (a path that is wrong, a full or read-only disk:
``attnseq: error: <path>: <what is wrong>; <what to do>``), memory the system refused, output
standard output's encoding cannot hold: each a row of attnseq.errors.TRANSLATIONS, the table the
API and the server read too. Any other exception is a bug and shows its traceback. An interrupt
prints one line and exits with the status a shell gives a process that signal ends (130 for
Ctrl-C, 143 for SIGTERM)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from ..errors import UserError
from ..threads import check_openmp_environment
from . import average, compare, data, demo, evaluate, export, plot, reproduce, serve, train, translate
from .arguments import HelpFormatter, command_line_message

# the commands, in the order ``attnseq --help`` lists them
COMMANDS = {
    "data": data,
    "train": train,
    "evaluate": evaluate,
    "translate": translate,
    "average": average,
    "export": export,
    "compare": compare,
    "reproduce": reproduce,
    "demo": demo,
    "serve": serve,
    "plot": plot,
}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help states each argument's default and whose errors are one line
    (a UsageError that ``main`` prints); its subparsers are Parsers too."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message: str):
        command = self.prog.removeprefix("attnseq").strip()
        if message.startswith("unrecognized arguments: "):  # -q after the command: say where it goes
            misplaced = [word for word in message.split(": ", 1)[1].split() if word in self._option_string_actions]
            if misplaced:
                raise UsageError(f"{' '.join(misplaced)} goes before the command: attnseq {misplaced[0]} COMMAND ...")
        raise UsageError(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)")


class UsageError(UserError):
    """A command line argparse cannot read: a missing, unknown or malformed argument."""


class VersionAction(argparse.Action):
    """``--version``: print ``attnseq X.Y.Z`` and exit (the version read only when asked)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"attnseq {version()}")
        parser.exit()


def version() -> str:
    """The installed package's version (its metadata), else the source tree's ``attnseq.__version__``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("attnseq")
    except PackageNotFoundError:
        from .. import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The ``attnseq`` parser: each command's subparser, its ``func`` the command's handler."""
    parser = Parser(prog="attnseq", description="Attention-based sequence-to-sequence learning.")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and results")
    parser.add_argument("--version", action=VersionAction, help="print attnseq's version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.HELP, description=getattr(command, "DESCRIPTION", None))
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM received: raised where the command is, so that what it had not finished is removed
    on the way out (a temporary file, a folder half made) as on Ctrl-C; exit status 143."""

    exit_status = 128 + signal.SIGTERM

    def __str__(self) -> str:
        return "stopped (SIGTERM); what was not finished is removed"


def terminated(signum: int, frame) -> None:
    raise Terminated


def set_up_process(own: bool):
    """What a command needs of its process before it starts; ``own``: the process is the
    command's. Returns the SIGTERM handler it replaced (None when it replaced none)."""
    # attnseq draws to files (matplotlib's Agg, viz.pyplot), so a backend named in the environment
    # has no say; one matplotlib does not know would end its import in a ValueError
    os.environ.pop("MPLBACKEND", None)
    if own:  # SIGTERM (timeout, a scheduler, docker stop) stops any command as Ctrl-C does
        return signal.signal(signal.SIGTERM, terminated)
    return None


def set_up_console(quiet: bool) -> None:
    """attnseq's own messages on standard error from INFO (``quiet``: WARNING); other libraries'
    from WARNING, so that their INFO (torch's FakeTensor cache stats at exit) stays out of it."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("attnseq").setLevel(logging.WARNING if quiet else logging.INFO)


FOLDER_FLAGS = ("out", "runs")  # the flags that name a folder (or plot's image file) to write: never '-'


def refuse_standard_folders(args: argparse.Namespace) -> None:
    """A UserError where a folder or image output (--out, --runs) is given as '-': standard output
    means one stream of text (translate --output -), and a folder named '-' made instead would
    surprise the user who asked for it."""
    for dest in FOLDER_FLAGS:
        if str(getattr(args, dest, None)) == "-":
            raise UserError(
                f"--{dest} -: standard output takes text (translate --output -), not a folder or an image; give a path"
            )


def interrupt_behind(err: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM) an exception was raised in handling, or from; None when it has none."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def stopped(err: KeyboardInterrupt, own: bool) -> int:
    """The one line and exit status of a command stopped by Ctrl-C or SIGTERM; when the process is
    the command (``own``) it ends now, so another signal changes nothing."""
    if own:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
    print(f"attnseq: {str(err) or 'interrupted'}", file=sys.stderr)
    return getattr(err, "exit_status", 130)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default: the process's arguments) gives; the exit status: 0, or
    2 after the one line attnseq.errors' table gives an error (an error it has no row for is a
    bug and keeps its traceback). A command stopped by Ctrl-C or SIGTERM returns 130 or 143;
    when it is the process's own command (no ``argv``), later signals are ignored while the
    process ends, so a second Ctrl-C after training saved cannot end it with a traceback."""
    before = set_up_process(own=argv is None)
    try:
        check_openmp_environment()  # before anything imports torch
        args = build_parser().parse_args(argv)
        set_up_console(args.quiet)
        refuse_standard_folders(args)
        args.func(args)
    except KeyboardInterrupt as err:  # Ctrl-C; from training, Interrupted, which says what it saved
        return stopped(err, own=argv is None)
    except Exception as err:
        stop = interrupt_behind(err)
        if stop is not None:  # Ctrl-C that Python wrapped (in a class body's __set_name__, say)
            return stopped(stop, own=argv is None)
        line = command_line_message(err)
        if line is None:  # no row of the table: a bug
            raise
        if line:  # (none where the output's reader went away: nothing failed)
            print(f"attnseq: error: {line}", file=sys.stderr)
        return 2 if line else 0
    finally:
        if argv is None:  # the process is the command and its work is done: a signal now would end
            # Python's shutdown killed by it (-2, -15) where the command succeeded or said why it stopped
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, signal.SIG_IGN)
        elif before is not None:  # the process may go on (a script that called main): its handler back
            signal.signal(signal.SIGTERM, before)
    return 0
