"""The command line: train a tiny config, evaluate --json, translate; errors are one line."""

from __future__ import annotations

import argparse
import io
import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import LEARN, TINY, parsers, reverse_pairs, sets, write_tsv
from hypothesis import given, settings
from hypothesis import strategies as st
from learning import at_least, learns

from attnseq.cli import build_parser, main


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnseq.cli", *args], input=stdin, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def reverse_dir(tmp_path_factory) -> Path:
    from helpers import write_reverse_dir

    return write_reverse_dir(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def trained(reverse_dir, tmp_path_factory) -> Path:
    """The book preset, adapted to the reversal task, trained through the CLI."""
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    settings = (
        TINY
        + LEARN
        + [
            "data.strip=true",
            "data.reverse_source=false",
            "model.encoder.bidirectional=true",
            "model.bridge=linear",
            "model.attention=general",
            "model.init=default",
        ]
    )
    assert (
        main(
            [
                "-q",
                "train",
                "configs/book-attention.yaml",
                "--data",
                str(reverse_dir),
                "--out",
                str(run_dir),
                *sets(*settings),
            ]
        )
        == 0
    )
    return run_dir


@pytest.mark.slow
@learns
def test_train_evaluate_translate(trained, reverse_dir, capsys, monkeypatch):
    assert main(["-q", "evaluate", str(trained), "--data", str(reverse_dir / "test.tsv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    for key in ("exact_match", "token_accuracy", "sentences", "seconds", "chrf"):
        assert key in metrics
    assert "bleu" not in metrics  # one-word references: BLEU-4 would be 0 however right they are
    assert metrics["sentences"] == 40
    at_least("test exact match", metrics["exact_match"], 1.0)
    # a data folder means its test split
    assert main(["-q", "evaluate", str(trained), "--data", str(reverse_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sentences"] == 40

    result = run("translate", str(trained), stdin="abc\nfedd\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["cba", "ddef"]

    # n-best lists: "score<TAB>hypothesis", best first; the beam widens to n when needed
    (trained / "sources.txt").write_text("abc\nfedd\n")
    assert (
        main(
            [
                "-q",
                "translate",
                str(trained),
                "--input",
                str(trained / "sources.txt"),
                "--n-best",
                "3",
                "--output",
                str(trained / "nbest.txt"),
            ]
        )
        == 0
    )
    lines = (trained / "nbest.txt").read_text().splitlines()
    assert len(lines) == 3 * 2 and lines[0].endswith("\tcba") and lines[3].endswith("\tddef")
    scores = [float(line.split("\t")[0]) for line in lines[:3]]
    assert scores == sorted(scores, reverse=True)

    # the Python API on the same run
    import attnseq
    from attnseq import allocator as malloc

    allocator = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: allocator.append("set"))
    model = attnseq.load(trained)
    decoder_weights = [p for n, p in model.model.named_parameters() if p.dim() == 2 and "embed" not in n]
    assert decoder_weights and all(p.t().is_contiguous() for p in decoder_weights)  # laid out for decoding
    assert allocator == ["set"]  # and the allocator set to reuse each step's large blocks
    assert model.translate(["abcd"]) == ["dcba"]
    outputs, attention = model.translate(["abcd", "ef"], return_attention=True)
    assert outputs == ["dcba", "fe"]
    assert attention[0].shape == (5, 4) and attention[1].shape == (3, 2)  # output tokens + eos, by source
    assert abs(attention[0].sum(1) - 1).max() < 1e-5


@pytest.mark.parametrize(
    "args, words",
    [
        (["train", "configs/book-attention.yaml", "--set", "model.hiden=3"], ["model.hiden", "unknown key"]),
        (["train", "configs/book-attention.yaml", "--set", "model.attention=magic"], ["model.attention", "dot"]),
        (["train", "configs/nope.yaml"], ["nope.yaml"]),
        (["train", "configs/book-attention.yaml", "--data", "/nonexistent"], ["/nonexistent", "no such file"]),
        (["evaluate", "/nonexistent", "--data", "x.tsv"], ["not a run folder"]),
        (
            ["train", "configs/book-attention.yaml", "--set", "train.target_exact_match=1.5"],
            ["train.target_exact_match", "[0, 1]"],
        ),
    ],
)
def test_user_errors_are_one_line(args, words, capsys):
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    for word in words:
        assert word in lines[0]


def test_user_error_exit_status_and_no_traceback():
    result = run("train", "configs/book-attention.yaml", "--set", "train.epochs=many")
    assert result.returncode == 2
    assert result.stderr.strip() == "attnseq: error: train.epochs: expected a whole number, got 'many'"


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"attnseq {version('attnseq')}\n"
    result = run("--version")  # python -m attnseq.cli, as the tests and torchrun call it
    assert result.returncode == 0 and result.stdout == f"attnseq {version('attnseq')}\n"


def test_every_argument_has_help_that_states_its_default():
    checked = 0
    for path, parser in parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):  # a command: its help is in its parent's list
                for choice in action._choices_actions:
                    assert choice.help, f"{path} {choice.dest}: no help"
                continue
            where = f"{path} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{where}: no help"
            text = formatter._expand_help(action)  # as --help prints it
            if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
                assert "(default: None)" not in text and "(default: False)" not in text, where
            else:
                assert f"(default: {action.default})" in text, f"{where}: {text!r} does not say its default"
            checked += 1
    assert checked > 100  # every command's and every data source's arguments were walked


def test_reproduce_records_the_options_given_not_where_it_writes(monkeypatch):
    import attnseq.reproduce

    commands = []
    monkeypatch.setattr(attnseq.reproduce, "reproduce", lambda *args, command, **kwargs: commands.append(command))
    assert (
        main(
            [
                "reproduce",
                "placement",
                "--out",
                "o",
                "--runs",
                "r",
                "--budget-minutes",
                "0.5",
                "--seeds",
                "3",
                "--set",
                "a=1",
                "--threads",
                "2",
                "--set",
                "b=2",
            ]
        )
        == 0
    )
    assert main(["reproduce", "placement", "--threads", "4"]) == 0
    assert commands == [
        "attnseq reproduce placement --budget-minutes 0.5 --seeds 3 --threads 2 --set a=1 --set b=2",
        "attnseq reproduce placement --threads 4",
    ]


@pytest.mark.parametrize("threads", ["0", "-1", "1025", "100000"])
def test_reproduce_refuses_threads_no_machine_runs(monkeypatch, capsys, threads):
    """--threads 100000 spun 100,000 threads (a load of 40 on 2 cores) until it was killed; below 1
    it was passed on as train.threads, an error naming a key the user never wrote."""
    import attnseq.reproduce

    monkeypatch.setattr(attnseq.reproduce, "reproduce", lambda *args, **kwargs: pytest.fail("reproduced"))
    assert main(["reproduce", "placement", "--threads", threads]) == 2
    assert capsys.readouterr().err.startswith(
        f"attnseq: error: reproduce: --threads must be 1 to 1,024, got {threads} "
    )


def test_a_run_is_used_without_the_training_modules(quick_runs, tmp_path):
    """translate, evaluate and serve, and attnseq.load from Python, use a run without importing
    attnseq.train (nor does building the parser import torch): one fresh interpreter for all."""
    run_dir, data = quick_runs["rnn"], quick_runs.data
    script = f"""
import sys
from attnseq.cli import build_parser, main
build_parser()
assert "torch" not in sys.modules, "building the parser imported torch"
import attnseq.serve.server as server
server.serve = lambda app, sock, log_level, ready: sock.close()  # serve: load the runs, bind, return
assert main(["-q", "translate", {str(run_dir)!r}, "--input", {str(data / "test.tsv")!r},
             "--output", {str(tmp_path / "out.txt")!r}]) == 0
assert main(["-q", "evaluate", {str(run_dir)!r}, "--data", {str(data)!r}, "--json"]) == 0
assert main(["-q", "serve", {str(run_dir)!r}, "--port", "0"]) == 0
import attnseq
model = attnseq.load({str(run_dir)!r})
model.translate(["abc"], beam_size=2)
model.evaluate([("abc", "cba")])
print(sorted(m for m in sys.modules if m.startswith("attnseq.train")))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_training_stops_once_dev_exact_match_reaches_the_target(tmp_path, caplog):
    """train.target_exact_match: the first evaluation at the target ends the run, and says so."""
    from attnseq.runs import read_metrics

    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 256), ("dev", 20), ("test", 5)):  # one answer to learn: "x"
        write_tsv(data / f"{split}.tsv", [(word, "x") for word, _ in reverse_pairs(n, seed=n)])
    caplog.set_level(logging.INFO, logger="attnseq")
    settings = TINY + ["train.epochs=50", "train.eval_every=1", "train.lr=0.003", "train.target_exact_match=1.0"]
    assert (
        main(
            [
                "train",
                "configs/book-attention.yaml",
                "--data",
                str(data),
                "--out",
                str(tmp_path / "run"),
                *sets(*settings),
            ]
        )
        == 0
    )
    evaluations = [r for r in read_metrics(tmp_path / "run") if r["type"] == "eval"]
    assert [r["dev_exact_match"] == 1.0 for r in evaluations] == [False] * (len(evaluations) - 1) + [True]
    assert len(evaluations) > 1 and evaluations[-1]["step"] < 50 * 8  # while training, long before its epochs
    assert "stopping: dev exact match reached 100.00% (train.target_exact_match)" in caplog.messages


@pytest.mark.slow  # trains in subprocesses; the in-process properties cover the class fast
def test_an_os_error_a_user_causes_is_one_line_without_a_traceback(tmp_path):
    """Paths that are files where a folder is needed (or under one), read through the real file
    system by the installed entry point: status 2, one line naming the path and what to do."""
    (tmp_path / "file").write_text("x")
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev", "test"):
        write_tsv(data / f"{split}.tsv", reverse_pairs(8, seed=1))
    for out in (tmp_path / "file", tmp_path / "file" / "run"):
        result = run("train", "configs/book-attention.yaml", "--data", str(data), "--out", str(out))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().splitlines()[-1].startswith(f"attnseq: error: {out}: "), result.stderr
    result = run("data", "dates", "--out", str(tmp_path / "file" / "data"), "--train", "3")
    assert result.returncode == 2 and result.stderr.strip() == (
        f"attnseq: error: {tmp_path / 'file' / 'data'}: {tmp_path / 'file'} is a file, not a folder; "
        "give a path under a folder"
    )


@pytest.mark.parametrize(
    "text, words",
    [
        ("model:\n  hidden_size: 8\n  hidden_size: 9\n", ":3: model.hidden_size is given twice (first on line 2)"),
        ("\n# nothing yet\n", ": an empty config"),
    ],
)
def test_a_config_with_a_key_twice_or_empty_is_one_line(tmp_path, capsys, text, words):
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    assert main(["train", str(config), "--data", str(tmp_path), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip().startswith(f"attnseq: error: {config}{words}")
    assert not (tmp_path / "run").exists()


def test_data_sort_with_its_defaults_draws_a_priority_for_every_item(tmp_path):
    """The longest default test set holds 40 items: the default priorities are as many (32
    otherwise), so the command as documented works."""
    from attnseq.data.corpus import read_tsv

    assert main(["-q", "data", "sort", "--out", str(tmp_path / "s"), "--train", "4", "--dev", "2", "--test", "2"]) == 0
    source, _ = read_tsv(tmp_path / "s" / "test-len40.tsv")[0]
    assert len(set(source.split()[1::2])) == 40  # 40 distinct priorities


def test_evaluate_on_a_file_without_pairs_names_the_file(quick_runs, tmp_path, capsys):
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    assert main(["evaluate", str(quick_runs["rnn"]), "--data", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"attnseq: error: {empty}: no pairs to evaluate; give a file of source<TAB>reference lines"
    )


@pytest.mark.parametrize(
    "args, line",
    [
        (["translate", "/nonexistent"], "/nonexistent: not a run folder (no config.yaml)"),
        (["translate", "RUN", "--set", "decode.nope=3"], "--set decode.nope: unknown key; decode takes "),
        (
            ["evaluate", "RUN", "--data", "x.tsv", "--set", "decode.beam_size=0"],
            "--set decode.beam_size: expected a value >= 1, got 0",
        ),
        (
            ["translate", "RUN", "--set", "model.hidden_size=8"],
            "--set model.hidden_size: fixed when the model was trained",
        ),
    ],
)
def test_errors_of_the_api_are_told_in_the_command_lines_words(quick_runs, args, line, capsys, monkeypatch):
    """A command that calls the Python API names what was wrong by its flag (--set), not by the
    API's argument (overrides, run_dir)."""
    monkeypatch.setattr("sys.stdin", io.StringIO("abc\n"))
    assert main([str(quick_runs["rnn"]) if a == "RUN" else a for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"attnseq: error: {line}") and "overrides" not in err and "run_dir" not in err, err


@settings(max_examples=40, deadline=None)
@given(
    argument=st.sampled_from(
        [
            "run_dir",
            "run_dir[2]",
            "overrides",
            "overrides[0]",
            "precision",
            "beam_size",
            "n_best",
            "checkpoint",
            "config",
            "on_eval",
        ]
    ),
    detail=st.text(min_size=1, max_size=30),
    key=st.one_of(st.none(), st.just("decode.beam_size")),
)
def test_an_api_error_is_told_by_the_flag_the_command_has(argument, detail, key):
    """Whatever API argument an error names, the command line's line names a flag some command
    has, or the argument as the API does (a Python-only argument), never both."""
    from attnseq.cli.arguments import API_WORDS, command_line_message
    from attnseq.translator.arguments import ArgumentValueError

    line = command_line_message(ArgumentValueError(argument, detail, key))
    word = API_WORDS.get(argument.split("[")[0])
    assert detail in line
    if word is None:
        assert line.startswith(argument)
    else:
        assert not line.startswith(argument) and (line.startswith(word) if word else line == detail)
        flags = {o for _, p in parsers(build_parser()) for a in p._actions for o in a.option_strings}
        assert not word or word in flags


def test_data_refuses_more_workers_than_cpus(monkeypatch, capsys, tmp_path):
    """--workers above the CPUs this process may use: one line, nothing written (the output is the
    same for any number; each worker is a process)."""
    import attnseq.hardware

    monkeypatch.setattr(attnseq.hardware, "usable_cpus", lambda: 2)
    assert (
        main(
            [
                "data",
                "dates",
                "--train",
                "100",
                "--dev",
                "5",
                "--test",
                "5",
                "--workers",
                "3",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.startswith(
        "attnseq: error: --workers: 3 processes on the 2 CPUs this process may "
        "use gain nothing; give at most 2 (the output is the same for any"
    )
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())
    assert (
        main(
            [
                "data",
                "dates",
                "--train",
                "100",
                "--dev",
                "5",
                "--test",
                "5",
                "--workers",
                "2",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )


def test_one_table_gives_the_line_of_every_error_that_is_no_bug():
    """attnseq.errors' table, which the command line, the API and the server read: a user's error
    (a setting, a path) is one line for all three; memory the system refused is a line for the
    command line but not the user's (the server's 500); a reader gone away has nothing to say;
    a bug is no row's."""
    import errno

    from attnseq.errors import ConfigError, explained, user_message

    setting = ConfigError("decode.beam_size: expected a value >= 1, got 0", key="decode.beam_size")
    assert user_message(setting) == "decode.beam_size: expected a value >= 1, got 0"
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "x.tsv")
    assert user_message(missing) == "x.tsv: no such file or folder; check the path"
    line, users = explained(
        RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes")
    )
    assert line.startswith("out of memory (2.00 GiB asked at once); ask for less") and not users
    assert user_message(MemoryError()) is None
    assert explained(BrokenPipeError(errno.EPIPE, "Broken pipe")) == ("", False)
    assert explained(RuntimeError("a bug")) is None and explained(OSError(errno.EBADF, "Bad file descriptor")) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "sig, inherited",
    [(signal.SIGINT, signal.SIG_DFL), (signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.SIG_IGN)],
    ids=["int", "term", "int-ignored-at-start"],
)
def test_the_server_says_it_serves_once_a_signal_ends_it_cleanly(quick_runs, sig, inherited):
    """``attnseq serve`` prints its "Serving ... at URL" line once uvicorn has started: the URL
    answers, and a signal sent the moment the line is read ends the server with one line and
    130 or 143 (the drill once saw a Ctrl-C sent on the line, before uvicorn's handlers, hang);
    so does a SIGINT where the process started with it ignored (a script's background job, as
    a test run started with ``&`` is: uvicorn stopped on it, and the command ended 0)."""
    import http.client

    server = subprocess.Popen(
        [sys.executable, "-m", "attnseq.cli", "-q", "serve", str(quick_runs["rnn"]), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("Serving "), line
        port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/runs")
        assert connection.getresponse().status == 200
        server.send_signal(sig)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 128 + sig
    assert len(err.strip().splitlines()) == 1 and err.startswith("attnseq: "), err
