"""Classifier path end to end on a generated corpus with the tiny offline model: it learns, the
exported folder reloads through ``pipeline`` with the label names, predict.py writes one row per
input, and bad inputs give one-line errors with a non-zero exit."""

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from classifier_fixtures import (  # noqa: E402
    LABELS,
    OFFLINE_ENV,
    REPO,
    load_script,
    make_corpus,
    make_rows,
    make_tiny,
    read_jsonl,
    reset_accelerate,
    single_thread,
    train_argv,
    write_rows,
)

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, corpus):
    return make_tiny(tmp_path_factory.mktemp("tiny"), corpus["train"])


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus, tiny):
    """One 4-epoch run through scripts/train_classifier.py, shared by the checks below."""
    out = tmp_path_factory.mktemp("run") / "out"
    reset_accelerate()
    argv = train_argv(corpus, tiny, out, "--num_train_epochs", "4", "--eval_steps", "25", "--report_to", "tensorboard")
    assert load_script("train_classifier").main(argv) == 0
    return out


def test_corpus_is_not_decided_by_any_single_token():
    rows = make_rows(480, seed=1)
    best = 0.0
    for token in {w for r in rows for w in r["text"].split()}:
        # The best rule "label = positive iff token present" (or its negation).
        hits = sum((token in r["text"].split()) == (r["label"] == "positive") for r in rows) / len(rows)
        best = max(best, hits, 1 - hits)
    assert best < 0.75
    assert abs(Counter(r["label"] for r in rows)["positive"] / len(rows) - 0.5) < 0.1  # balanced: chance ~50%


def test_tiny_model_learns_well_above_chance(trained):
    results = json.loads((trained / "eval_results.json").read_text())
    assert results["best"]["eval/accuracy"] > 0.85
    assert results["final"]["eval/accuracy"] > 0.8
    assert results["final"]["eval/f1_macro"] > 0.8
    assert results["final"]["eval/samples"] == results["num_eval_examples"] == 101
    assert results["label_names"] == LABELS and results["final_lr"] == 0.0


def test_run_folder_holds_config_metrics_tracker_logs_and_checkpoint(trained):
    config = json.loads((trained / "config.json").read_text())
    assert config["model_name_or_path"].endswith("tiny") or Path(config["model_name_or_path"]).is_dir()
    assert config["learning_rate"] == 1e-3 and config["num_train_epochs"] == 4
    records = read_jsonl(trained / "metrics.jsonl")
    train_rows = [r for r in records if "loss/train" in r]
    eval_steps = [r["step"] for r in records if "eval/accuracy" in r]
    assert eval_steps == [25, 30, 50, 60, 75, 90, 100, 120]  # every 25 updates and every epoch (30)
    assert train_rows[-1]["step"] == 120 and train_rows[-1]["lr/model"] == 0.0
    assert train_rows[-1]["loss/train"] < train_rows[0]["loss/train"]
    assert list((trained / "logs").rglob("events.out.tfevents*"))
    assert (trained / "checkpoints" / "step_00000120" / "trainer_state.json").is_file()


def test_saved_folder_reloads_through_pipeline_with_label_names(trained):
    from transformers import AutoModelForSequenceClassification, pipeline

    model = AutoModelForSequenceClassification.from_pretrained(trained / "model")
    assert model.config.id2label == {0: "negative", 1: "positive"}
    clf = pipeline("text-classification", model=str(trained / "model"), device="cpu")
    rows = make_rows(40, seed=3)
    preds = clf([r["text"] for r in rows])
    assert {p["label"] for p in preds} <= set(LABELS)
    assert sum(p["label"] == r["label"] for p, r in zip(preds, rows)) / len(rows) > 0.75


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_predict_writes_one_row_per_input(trained, tmp_path, suffix):
    texts = [r["text"] for r in make_rows(7, seed=4)]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    out = tmp_path / f"preds{suffix}"
    argv = [
        "--model",
        str(trained / "model"),
        "--input_file",
        str(tmp_path / "in.txt"),
        "--output_file",
        str(out),
        "--batch_size",
        "3",
    ]
    assert load_script("predict").main(argv) == 0
    rows = list(csv.DictReader(out.open())) if suffix == ".csv" else read_jsonl(out)
    assert [r["text"] for r in rows] == texts
    assert all(r["label"] in LABELS and 0.5 <= float(r["score"]) <= 1.0 for r in rows)


def test_predict_texts_on_stdout(trained, capsys):
    assert load_script("predict").main(["--model", str(trained / "model"), "--text", "great good film", "dull"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["text"] for r in lines] == ["great good film", "dull"]


# ---- clear errors -----------------------------------------------------------------------------
def bad_inputs(tmp_path, corpus, case):
    good_val = str(corpus["validation"])
    if case == "missing column":
        path = write_rows(tmp_path / "t.csv", [{"sentence": "a b", "label": "positive"}])
        return str(path), good_val, "no column 'text'"
    if case == "empty file":
        (tmp_path / "t.csv").write_text("")
        return str(tmp_path / "t.csv"), good_val, "empty"
    if case == "unknown validation label":
        path = write_rows(tmp_path / "v.jsonl", make_rows(3, seed=5) + [{"text": "so so", "label": "neutral"}])
        return str(corpus["train"]), str(path), "label 'neutral', not among the training labels"
    if case == "unreadable file":
        (tmp_path / "t.csv").write_bytes(b"text,label\n\xff\xfe bad,1\n")
        return str(tmp_path / "t.csv"), good_val, "unreadable"
    if case == "missing file":
        return str(tmp_path / "nope.csv"), good_val, "file not found"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case", ["missing column", "empty file", "unknown validation label", "unreadable file", "missing file"]
)
def test_bad_data_is_a_one_line_error(tmp_path, corpus, tiny, capsys, case):
    train, val, message = bad_inputs(tmp_path, corpus, case)
    argv = [
        "--train_file",
        train,
        "--validation_file",
        val,
        "--model_name_or_path",
        str(tiny),
        "--output_dir",
        str(tmp_path / "out"),
    ]
    with pytest.raises(SystemExit) as exit_info:
        load_script("train_classifier").main(argv)
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (tmp_path / "out").exists()  # failed before touching the run folder


def test_error_exit_code_from_a_real_process(tmp_path, corpus, tiny):
    train, val, message = bad_inputs(tmp_path, corpus, "unknown validation label")
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "train_classifier.py"),
            "--train_file",
            train,
            "--validation_file",
            val,
            "--model_name_or_path",
            str(tiny),
            "--output_dir",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE_ENV, "OMP_NUM_THREADS": "1"},
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr
