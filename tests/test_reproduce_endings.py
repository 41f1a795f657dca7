"""How a reproduction's runs ended: the plateau rule replayed over a run's metrics log names the
evaluation that last renewed its patience, by which number, and the evaluations after it; the
page's runs table counts the runs at their cap that only the dev loss kept going."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnseq.config import load_config, save_config
from attnseq.reproduce.base import RunRecord, longest_first, makespan
from attnseq.reproduce.page import read_page_record, runs_table, write_index
from attnseq.reproduce.training import cpu_share, how_it_ended, record_of
from attnseq.runs import log_metrics, read_metrics


def run_folder(
    path: Path,
    evals: list[tuple[int, float, float]],
    patience: int = 4,
    min_delta: float = 0.005,
    min_loss_delta: float = 0.02,
) -> Path:
    """A run folder whose log holds evaluations (step, dev exact match, dev loss)."""
    path.mkdir()
    save_config(
        load_config(
            None,
            [
                f"train.patience={patience}",
                f"train.min_delta={min_delta}",
                f"train.min_loss_delta={min_loss_delta}",
                "train.select_by=exact_match",
            ],
        ),
        path / "config.yaml",
    )
    log_metrics(path, {"type": "start", "select_by": "exact_match"})
    for step, score, loss in evals:
        log_metrics(
            path, {"type": "eval", "epoch": step / 100, "step": step, "dev_exact_match": score, "dev_loss": loss}
        )
    return path


def test_a_run_kept_going_by_its_loss_says_so(tmp_path):
    # exact match flat at 99.6% from update 300; the loss falls 25% at 400, then 1.2% and 1.9% below
    # the loss of update 400 (the rule compares with the evaluation that last renewed it)
    run = run_folder(
        tmp_path / "run",
        [
            (100, 0.50, 1.0),
            (200, 0.90, 0.3),
            (300, 0.996, 0.0108),
            (400, 0.996, 0.0081),
            (500, 0.996, 0.0080),
            (600, 0.996, 0.00795),
        ],
    )
    ending = how_it_ended(run)
    assert ending["by_loss"]
    assert ending["why"] == (
        "patience last renewed at update 400 by the dev loss 0.0108 -> 0.0081 (-25%; dev exact "
        "match 99.6%); 2 evaluations after it without a renewal (the rule ends a run at 4)"
    )


def test_a_run_renewed_by_its_metric_and_one_at_its_plateau(tmp_path):
    climbing = run_folder(tmp_path / "climbing", [(100, 0.20, 2.0), (200, 0.40, 1.0), (300, 0.65, 0.5)])
    assert how_it_ended(climbing) == {
        "by_loss": False,
        "why": (
            "patience last renewed at update 300 by dev exact match 40.0% -> 65.0%; 0 evaluations after it without a "
            "renewal (the rule ends a run at 4)"
        ),
    }
    # a rise of 0.4 points is within the margin of 0.5: it renews nothing, nor does a loss fall of 1%
    flat = run_folder(
        tmp_path / "flat",
        [(100, 0.90, 0.5), (200, 0.904, 0.495), (300, 0.902, 0.493), (400, 0.90, 0.492), (500, 0.903, 0.491)],
    )
    assert how_it_ended(flat)["why"] == (
        "patience last renewed at update 100 by the first evaluation (dev exact match "
        "90.0%); 4 evaluations after it without a renewal (the rule ends a run at 4)"
    )


def test_a_run_whose_last_evaluation_at_its_cap_completes_the_rule_converged(tmp_path):
    """The rule's four evaluations without a renewal were all in at update 500, the cap: the rule
    ended the run there as the cap did, so it reached its plateau; one evaluation fewer, it did not."""
    evals = [(100, 0.90, 0.5), (200, 0.904, 0.495), (300, 0.902, 0.493), (400, 0.90, 0.492), (500, 0.903, 0.491)]
    settled = record_of("a", 1, 500, 500, run_folder(tmp_path / "settled", evals))
    assert settled.converged and settled.why.endswith(
        "4 evaluations after it without a renewal (the rule ends a run at 4)"
    )
    cut = record_of("a", 1, 400, 400, run_folder(tmp_path / "cut", evals[:4]))
    assert not cut.converged and cut.why.endswith("3 evaluations after it without a renewal (the rule ends a run at 4)")
    assert record_of("a", 1, 300, 500, run_folder(tmp_path / "early", evals[:3])).converged  # stopped before its cap


def test_a_lower_metric_with_a_lower_loss_renews_nothing(tmp_path):
    run = run_folder(tmp_path / "run", [(100, 0.50, 1.0), (200, 0.49, 0.5)])
    assert how_it_ended(run)["why"].endswith("1 evaluation after it without a renewal (the rule ends a run at 4)")


def test_without_a_plateau_rule_the_last_new_best_is_named(tmp_path):
    run = run_folder(
        tmp_path / "run",
        [(100, 0.50, 1.0), (200, 0.70, 0.8), (300, 0.60, 0.7)],
        patience=0,
        min_delta=0.0,
        min_loss_delta=0.0,
    )
    log = (run / "metrics.jsonl").read_text()  # the trainer marks its new bests
    for loss in ("1.0", "0.8"):
        log = log.replace(f'"dev_loss": {loss}}}', f'"dev_loss": {loss}, "best": true}}')
    (run / "metrics.jsonl").write_text(log)
    assert how_it_ended(run) == {
        "by_loss": False,
        "why": (
            "no early stop (train.patience 0); its last new best at update 200: dev exact match 50.0% -> 70.0%; "
            "1 evaluation after it"
        ),
    }


def test_a_log_without_evaluations_gives_no_reason(tmp_path):
    assert how_it_ended(run_folder(tmp_path / "run", [])) == {"why": "", "by_loss": False}


def test_the_runs_table_counts_the_runs_the_loss_kept_going():
    runs = [
        RunRecord(
            "book", 1, 2400, 2400, False, why="patience last renewed at update 2,400 by the dev loss", by_loss=True
        ),
        RunRecord("book", 2, 2400, 2400, False, why="by dev exact match"),
        RunRecord("luong", 1, 1500, 2400, True, why="4 evaluations after it"),
    ]
    lines = runs_table(runs)
    assert lines[0] == (
        "How the runs ended: 1 of 3 reached their plateau before the cap. 1 of the 2 at the cap had "
        "their patience last renewed by the dev loss alone, the dev metric no longer rising past the "
        "rule's margin."
    )
    assert "| book | 1 | 2,400 updates | 2,400 | cap: patience last renewed at update 2,400 by the dev loss |" in lines
    assert "| luong | 1 | 1,500 updates | 2,400 | plateau (converged): 4 evaluations after it |" in lines


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(
        st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.floats(allow_nan=True), st.integers(-5, 5)),
        min_size=3,
        max_size=3,
    )
)
def test_a_log_with_anything_in_its_fields_is_read_or_skipped(tmp_path_factory, values):
    """A hand-edited log: fields holding strings, booleans, NaN or nothing are left out of the
    replay and the CPU share, never raised on."""
    run = run_folder(tmp_path_factory.mktemp("run") / "run", [(100, 0.5, 1.0)])
    step, score, loss = values
    log_metrics(run, {"type": "eval", "epoch": 1.0, "step": 200, "dev_exact_match": 0.9, "dev_loss": 0.5})
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "type": "eval",
                    "step": step,
                    "dev_exact_match": score,
                    "dev_loss": loss,
                    "cpu_seconds": score,
                    "wall_seconds": loss,
                }
            )
            + "\n"
        )
    ending = how_it_ended(run)
    assert ending["why"].startswith("patience last renewed at update ")
    share = cpu_share(run, 1)
    assert share is None or math.isfinite(share)


def test_the_index_times_the_pages_two_at_a_time_longest_first():
    assert makespan([3, 2, 2, 1], 2) == 4  # 3 | 2 then 2 then 1 on the first free slot
    assert makespan([3, 2, 2, 1], 1) == 8
    assert makespan([], 2) == 0
    assert longest_first(["nadaraya-watson", "luong-scorers", "heads"]) == ["luong-scorers", "heads", "nadaraya-watson"]


def test_bleu_is_named_as_pages_name_it(tmp_path):
    run = run_folder(tmp_path / "run", [(100, 0.5, 1.0)])
    log = (run / "metrics.jsonl").read_text().replace('"select_by": "exact_match"', '"select_by": "bleu"')
    (run / "metrics.jsonl").write_text(log.replace('"dev_exact_match": 0.5', '"dev_bleu": 12.25'))
    assert how_it_ended(run)["why"].startswith(
        "patience last renewed at update 100 by the first evaluation (dev BLEU 12.2)"
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FIELDS = st.sampled_from(
    ["type", "step", "epoch", "dev_loss", "dev_exact_match", "best", "select_by", "cpu_seconds", "wall_seconds"]
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(
        JSON | st.dictionaries(FIELDS, JSON | st.sampled_from(["start", "eval", "train"]), max_size=6), max_size=6
    )
)
def test_any_json_lines_in_a_log_are_read_or_skipped(tmp_path_factory, lines):
    """Whatever JSON a hand-edited metrics log holds beside the trainer's records (values that are
    no object, records of the trainer's types with fields of any JSON value, a start record naming
    any metric), the replay, the CPU share and the log's reader answer without raising."""
    run = run_folder(tmp_path_factory.mktemp("run") / "run", [(100, 0.5, 1.0), (200, 0.6, 0.9)])
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)
    assert all(isinstance(r, dict) for r in read_metrics(run))
    ending = how_it_ended(run)
    assert isinstance(ending["why"], str) and isinstance(ending["by_loss"], bool)
    share = cpu_share(run, 1)
    assert share is None or math.isfinite(share)


PAGES = Path(__file__).resolve().parents[1] / "docs" / "results"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(["verdict", "summary", "budget", "date", "seconds", "runs", None]),
    value=JSON,
    whole=st.none() | JSON | st.binary(max_size=8),
)
def test_the_index_names_a_page_whose_numbers_do_not_read(tmp_path_factory, field, value, whole):
    """A page's JSON with any field the index reads replaced by any JSON value (or removed), or
    the whole file anything else, is one row saying which file does not read and why; the other
    pages' rows and the index's time are as before."""
    out = tmp_path_factory.mktemp("results")
    for name in ("heads", "positions"):
        (out / f"{name}.json").write_bytes((PAGES / f"{name}.json").read_bytes())
    write_index(out, ["heads", "positions"])
    before = (out / "README.md").read_text(encoding="utf-8").splitlines()
    record = json.loads((out / "heads.json").read_text(encoding="utf-8"))
    if field is None:
        bad = whole if isinstance(whole, bytes) else json.dumps(whole).encode()
    else:
        record[field] = value
        bad = json.dumps(record).encode()
    (out / "heads.json").write_bytes(bad)
    try:
        read_page_record(out / "heads.json")
        readable = True
    except ValueError:
        readable = False
    lines = write_index(out, ["heads", "positions"]).read_text(encoding="utf-8").splitlines()
    heads = [line for line in lines if line.startswith("| heads") or line.startswith("| [heads]")]
    assert len(heads) == 1 and heads[0].count("\n") == 0
    assert ("heads.json does not read (" in heads[0]) is not readable
    assert [line for line in lines if "positions" in line] == [line for line in before if "positions" in line]
    assert sum("hours" in line for line in lines) == 1


def test_a_page_whose_numbers_do_not_read_is_named_with_the_reason(tmp_path):
    (tmp_path / "heads.json").write_text('{"verdict": "reproduced", "seconds": "ten"}', encoding="utf-8")
    (tmp_path / "positions.json").write_bytes((PAGES / "positions.json").read_bytes())
    text = write_index(tmp_path, ["heads", "positions"]).read_text(encoding="utf-8")
    assert "heads.json does not read (no 'summary'): `attnseq reproduce heads`" in text
    (tmp_path / "heads.json").write_text(
        '{"verdict": "r", "summary": "s", "budget": "b", "date": "d", "seconds": NaN, "runs": []}', encoding="utf-8"
    )
    assert "heads.json does not read ('seconds' is NaN)" in write_index(tmp_path, ["heads", "positions"]).read_text()
    assert "[positions](positions.md)" in text


def test_the_index_names_the_commit_that_made_each_page(tmp_path):
    """Each row of the index says which commit of attnseq made the page's numbers (the record's
    machine.attnseq); for a record that does not say, the last commit that changed its JSON."""
    import subprocess

    for name in ("heads", "positions"):
        (tmp_path / f"{name}.json").write_bytes((PAGES / f"{name}.json").read_bytes())
    made = json.loads((tmp_path / "heads.json").read_text(encoding="utf-8"))["machine"]["attnseq"]
    record = json.loads((tmp_path / "positions.json").read_text(encoding="utf-8"))
    del record["machine"]["attnseq"]
    (tmp_path / "positions.json").write_text(json.dumps(record), encoding="utf-8")
    lines = write_index(tmp_path, ["heads", "positions"]).read_text(encoding="utf-8").splitlines()
    assert next(line for line in lines if line.startswith("| [heads]")).endswith(f"| `{made}` |")
    assert next(line for line in lines if line.startswith("| [positions]")).endswith("| unknown |")  # no git here
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "positions.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "numbers"], check=True)
    last = subprocess.run([*git, "log", "-1", "--format=%h"], capture_output=True, text=True, check=True).stdout
    lines = write_index(tmp_path, ["heads", "positions"]).read_text(encoding="utf-8").splitlines()
    row = next(line for line in lines if line.startswith("| [positions]"))
    assert row.endswith(
        f"| before `{last.strip()}` (the last commit of its numbers; they do not say which made them) |"
    )
