"""Load check of ``attnseq serve``: N concurrent requests on loopback (default 200), each on its
own connection, all sent at once. Prints connection resets, 5xx answers, answers that differ
from decoding each sentence alone, and the latency's p50 and p99. Traffic stays on 127.0.0.1;
the server is started and stopped by this script.

    python bench/serve_load.py runs/demo/run --requests 200 --beam 1 --beam 5
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def start_server(*runs: str, log: bool = True, capture: bool = False) -> tuple[subprocess.Popen, int]:
    """``attnseq serve RUN... --port 0`` in a child process and the port it listens on; ``log``:
    the server's log goes to this process' stderr (else nowhere); ``capture``: to a pipe, read
    with ``communicate()`` once the server ends."""
    stderr = subprocess.PIPE if capture else None if log else subprocess.DEVNULL
    server = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", "serve", *map(str, runs), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        cwd=ROOT,
    )
    line = server.stdout.readline()  # "Serving NAME at http://127.0.0.1:PORT/ ..."
    if "http://" not in line:
        server.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return server, int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def post(port: int, body: dict, timeout: float) -> tuple[str, int | None, dict | None, float]:
    """(outcome, status, answer, seconds): outcome ok, reset or error."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/translate", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        return "ok", response.status, answer, time.perf_counter() - started
    except (ConnectionResetError, ConnectionRefusedError, http.client.RemoteDisconnected, BrokenPipeError):
        return "reset", None, None, time.perf_counter() - started
    except Exception as err:  # noqa: BLE001 (counted and shown)
        return f"error: {err}", None, None, time.perf_counter() - started
    finally:
        connection.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load_check(port: int, run: str | Path, requests: list[dict], timeout: float = 300.0) -> tuple[bool, list[str]]:
    """Send ``requests`` to the server on ``port`` all at once, each on its own connection, and
    check the answers against decoding each sentence alone with ``run``: (all answered 200 with
    the same outputs, no reset and no 5xx; the lines of the report)."""
    results: list = [None] * len(requests)
    barrier = threading.Barrier(len(requests))

    def send(i: int) -> None:
        barrier.wait()
        results[i] = post(port, requests[i], timeout)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    wall = time.perf_counter() - started

    import attnseq  # noqa: PLC0415

    model = attnseq.load(run)
    resets = sum(1 for r in results if r and r[0] == "reset")
    errors = [r[0] for r in results if r is None or r[0].startswith("error")]
    server_errors = sum(1 for r in results if r and r[1] is not None and r[1] >= 500)
    client_errors = sum(1 for r in results if r and r[1] is not None and 400 <= r[1] < 500)
    differ = 0
    for request, result in zip(requests, results):
        if result and result[1] == 200:
            alone = model.search([request["text"]], beam_size=request["beam_size"], n_best=request["beam_size"])[0]
            differ += [h["output"] for h in result[2]["hypotheses"]] != alone.outputs
    latencies = [r[3] for r in results if r and r[1] == 200]
    beams = sorted({r["beam_size"] for r in requests})
    lines = [
        f"{len(requests)} concurrent requests (beams {beams}) in {wall:.2f} s: "
        f"{len(latencies)} answered 200, {resets} connection resets, {server_errors} 5xx, "
        f"{client_errors} 4xx, {len(errors)} other failures, {differ} differ from sequential decoding"
    ]
    if latencies:
        lines.append(f"latency p50 {percentile(latencies, 0.5):.3f} s, p99 {percentile(latencies, 0.99):.3f} s")
    if errors:
        lines.append(f"first failure: {errors[0]}")
    ok = resets == server_errors == differ == len(errors) == 0 and len(latencies) == len(requests)
    return ok, lines


def date_requests(count: int, beams: list[int], texts: list[str] | None = None) -> list[dict]:
    """``count`` requests of generated dates (or ``texts``), beam sizes drawn from ``beams``."""
    if not texts:
        from attnseq.data.corpora.dates import generate_dates  # noqa: PLC0415

        texts = [s for s, _ in generate_dates(50, seed=11)]
    rng = random.Random(0)
    return [
        {"text": rng.choice(texts), "beam_size": rng.choice(beams), "return_attention": False} for _ in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a run folder")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--beam", type=int, action="append", help="beam sizes to mix (default: 1)")
    parser.add_argument("--texts", help="a file of source sentences (default: generated dates)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take")
    args = parser.parse_args()
    texts = None
    if args.texts:
        texts = [t for t in Path(args.texts).read_text(encoding="utf-8").splitlines() if t.strip()]
    requests = date_requests(args.requests, args.beam or [1], texts)
    server, port = start_server(args.run)
    try:
        ok, lines = load_check(port, args.run, requests, args.timeout)
    finally:
        server.terminate()
        server.wait(30)
    print("\n".join(lines))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
