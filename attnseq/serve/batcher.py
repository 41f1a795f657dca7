"""One decoding thread per run that decodes concurrent requests together.

Requests wait in the run's queue; the thread takes every request waiting (up to
``max_batch``) and decodes those that ask for the same settings in one batched search. Search
is batch-invariant (a sentence decodes the same alone or in a padded batch: tests/test_beam.py),
so batching changes how fast answers come, never what they are. One thread per model is also
the lock a torch module needs: it is never used by two threads at once.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from ..translator import Translation, Translator

log = logging.getLogger("attnseq")


class Busy(Exception):
    """The run's queue is full: the server is asked for more than it can decode."""


@dataclass
class Job:
    """One request: its text and decode settings, and where its answer goes."""

    text: str
    beam_size: int | None
    n_best: int | None
    with_attention: bool
    future: Future = field(default_factory=Future)

    @property
    def settings(self) -> tuple:
        return self.beam_size, self.n_best, self.with_attention


class DecodeWorker:
    """The thread that decodes one run's requests. ``render(job, translation)`` turns a result
    into the answer (it runs on this thread too, so the server's event loop never waits on it)."""

    def __init__(
        self,
        name: str,
        translator: Translator,
        render: Callable[[Job, Translation], object],
        max_waiting: int = 1024,
        max_batch: int = 64,
    ):
        self.name, self.translator, self.render = name, translator, render
        self.max_waiting, self.max_batch = max_waiting, max_batch
        self.queue: queue.Queue[Job | None] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name=f"decode-{name}", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> Future:
        """Queue ``job``; its future gets the rendered answer or the exception. Busy when
        ``max_waiting`` requests are already waiting."""
        if self.queue.qsize() >= self.max_waiting:
            raise Busy(f"{self.max_waiting} requests are waiting for run {self.name}; try again shortly")
        self.queue.put(job)
        return job.future

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the requests already taken, then end the thread."""
        self.queue.put(None)
        self.thread.join(timeout)

    def _loop(self) -> None:
        while True:
            job = self.queue.get()
            if job is None:
                return
            jobs, stopping = [job], False
            while len(jobs) < self.max_batch:
                try:
                    more = self.queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                jobs.append(more)
            self.decode(jobs)
            if stopping:
                return

    def decode(self, jobs: list[Job]) -> None:
        """Decode ``jobs``: one search for each group asking for the same settings."""
        groups: dict[tuple, list[Job]] = {}
        for job in jobs:
            if job.future.set_running_or_notify_cancel():  # False: the client went away
                groups.setdefault(job.settings, []).append(job)
        for (beam_size, n_best, with_attention), group in groups.items():
            try:
                results = self.translator.search(
                    [j.text for j in group], keep_attention=with_attention, beam_size=beam_size, n_best=n_best
                )
            except Exception as err:  # noqa: BLE001 (handed to each request, which answers with it)
                for job in group:
                    job.future.set_exception(err)
                continue
            for job, translation in zip(group, results):
                try:
                    job.future.set_result(self.render(job, translation))
                except Exception as err:  # noqa: BLE001
                    log.exception("run %s: rendering %r failed", self.name, job.text[:80])
                    job.future.set_exception(err)
