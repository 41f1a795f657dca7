"""``attnseq translate RUN`` at a terminal: the prompt edits its line as a shell does, so an arrow
key moves the cursor instead of being read (and "translated") as an escape code."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest


def read_until(fd: int, marker: bytes, seconds: float = 120) -> bytes:
    """What the terminal ``fd`` shows until ``marker`` appears (or the time runs out)."""
    seen, deadline = b"", time.monotonic() + seconds
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other end closed
                break
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX's")
def test_arrow_keys_edit_the_line_at_the_prompt_and_up_recalls_the_last(quick_runs):
    """Typed: "ab", Left, "X", Enter; then Up, Enter. The line read is "aXb" both times (its one
    piece outside the vocabulary is X), never "ab\\x1b[DX"."""
    run = quick_runs["local_p"]  # trained on the letters a-f: X is outside its vocabulary
    main, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "translate", str(run)],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "TERM": "xterm", "INPUTRC": os.devnull},
        close_fds=True,
    )
    os.close(secondary)
    try:
        assert b"> " in read_until(main, b"> ")
        os.write(main, b"ab\x1b[DX\r")
        first = read_until(main, b"> ")
        os.write(main, b"\x1b[A\r")  # Up: the line before, again
        second = read_until(main, b"> ")
        os.write(main, b"\x04")  # Ctrl-D
        process.wait(60)
    finally:
        process.kill()
        os.close(main)
    for shown in (first, second):
        assert b"outside the model's vocabulary: 'X')" in shown, shown
        assert b"\\x1b" not in shown, shown
    assert process.returncode == 0
