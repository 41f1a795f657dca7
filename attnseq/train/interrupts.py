"""Ctrl-C (SIGINT) and SIGTERM (what a cluster scheduler sends before it preempts a job) while
training: the first is a request the epoch loop acts on at the end of the update in progress (it
writes last.safetensors and raises Interrupted); a second stops at once, without saving."""

from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Training stopped by the signal ``signum``; the message says what was saved.

    A KeyboardInterrupt, so a caller of ``attnseq.fit`` stops as Ctrl-C stops any Python program;
    the command line exits with ``exit_status``, what a shell reports for a process that signal
    ends (130 for SIGINT, 143 for SIGTERM)."""

    def __init__(self, signum: int, what: str, again: bool = False):
        super().__init__(what)
        self.signum, self.what, self.again = signum, what, again  # again: a second signal, nothing saved
        self.resume_with = "resume=True"  # what continues the run; the command line gives its own command
        self.resumable = True  # False when there is nothing to resume from

    @property
    def exit_status(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        return f"{self.what}; {self.resume_with} continues" if self.resumable else self.what


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class StopRequests:
    """Within ``with StopRequests() as requests:`` SIGINT and SIGTERM do not stop the program:
    the first is kept in ``requests.signum`` for the training loop to act on; a second raises
    Interrupted at once. The handlers before are restored at the end of the block.

    Python runs signal handlers in the main thread only, so elsewhere (a server's worker thread)
    nothing is installed and a signal does what it did before."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._before: dict[int, object] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            self._before = {s: signal.signal(s, self.receive) for s in SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._before.items():
            signal.signal(s, handler)
        self._before = {}

    def receive(self, signum: int, frame=None) -> None:
        """The handler: keep the first signal; raise Interrupted on the second."""
        if self.signum is None:
            self.signum = signum
            return
        raise Interrupted(
            signum, f"interrupted again ({signal_name(signum)}): stopped at once, without saving", again=True
        )
