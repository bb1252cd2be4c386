"""Bad input on the classifier path (train_classifier.py, predict.py, distill_classifier.py,
make_tiny_model.py), as a table: each case exits with code 2 and one line ``error: ...`` naming
the file or flag, with no traceback, and leaves every file already on disk (the data, the model, a
run folder holding a user's notes) exactly as it was: same paths, same bytes, same modification
times."""

import errno
import json
import shutil
import sys
from pathlib import Path

import pytest

from classifier_fixtures import load_script, make_rows, make_tiny, reset_accelerate, write_rows  # noqa: E402
from helpers import one_line_error  # noqa: E402

GOOD_TRAIN = "\n".join(["text,label", *(f"{r['text']},{r['label']}" for r in make_rows(12, seed=1))]) + "\n"

# (id, script, argv, files written before the run, text the error line must contain)
# In argv: {train} {val} a good CSV/JSONL, {model} the tiny model, {out} a run folder holding a
# user's notes, {tmp} the test's folder. In files: path relative to {tmp} -> content.
TRAIN = ["--validation_file", "{val}", "--model_name_or_path", "{model}", "--output_dir", "{out}"]
# distill_classifier.py: {teacher} is the tiny model with the data's labels, {notok} the same without its tokenizer.
DISTIL = ["--validation_file", "{val}", "--output_dir", "{out}", "--max_length", "32", "--teacher_model_name_or_path"]
CASES = [
    # ---- data files: cases that already held -------------------------------------------------
    ("missing file", "train_classifier", ["--train_file", "{tmp}/nope.csv", *TRAIN], {}, "nope.csv: file not found"),
    (
        "empty file",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": ""},
        "t.csv: the file is empty",
    ),
    (
        "header only",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": "text,label\n"},
        "no examples",
    ),
    (
        "not UTF-8",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": b"text,label\n\xff\xfe bad,1\n"},
        "t.csv: unreadable",
    ),
    (
        "missing column",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": "sentence,label\na b,x\n"},
        "no column 'text' (columns: sentence, label)",
    ),
    (
        "line not JSON",
        "train_classifier",
        ["--train_file", "{tmp}/t.jsonl", *TRAIN],
        {"t.jsonl": '{"text": "a", "label": "x"}\n{not json\n'},
        "t.jsonl: line 2 is not JSON",
    ),
    (
        "line not an object",
        "train_classifier",
        ["--train_file", "{tmp}/t.jsonl", *TRAIN],
        {"t.jsonl": "[1, 2]\n"},
        "line 1 is a list, expected a JSON object",
    ),
    (
        "one label only",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": "text,label\na,x\nb,x\n"},
        "only one label ('x')",
    ),
    (
        "unknown validation label",
        "train_classifier",
        [
            "--train_file",
            "{train}",
            "--validation_file",
            "{tmp}/v.jsonl",
            "--model_name_or_path",
            "{model}",
            "--output_dir",
            "{out}",
        ],
        {"v.jsonl": '{"text": "a", "label": "positive"}\n{"text": "b", "label": "neutral"}\n'},
        "v.jsonl: line 2 has label 'neutral', not among the training labels",
    ),
    (
        "unsupported extension",
        "train_classifier",
        ["--train_file", "{tmp}/t.parquet", *TRAIN],
        {},
        "--train_file {tmp}/t.parquet: unsupported extension",
    ),
    (
        "no validation file",
        "train_classifier",
        ["--train_file", "{train}", "--output_dir", "{out}"],
        {},
        "--validation_file is required",
    ),
    (
        "file and hub dataset",
        "train_classifier",
        ["--train_file", "{train}", "--dataset_name", "glue", *TRAIN],
        {},
        "pass exactly one of --train_file",
    ),
    (
        "hub config without name",
        "train_classifier",
        ["--train_file", "{train}", "--dataset_config", "sst2", *TRAIN],
        {},
        "--dataset_config needs --dataset_name",
    ),
    (
        "uncached hub model",
        "train_classifier",
        [
            "--train_file",
            "{train}",
            "--validation_file",
            "{val}",
            "--model_name_or_path",
            "nobody/no-such-model-h11",
            "--output_dir",
            "{out}",
        ],
        {},
        "local folder written by save_pretrained",
    ),
    # ---- data files: fixed by issue 11 -------------------------------------------------------
    (
        "unclosed quote swallows rows",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": 'text,label\ngood film,positive\n"dull film,negative\nfine film,positive\nbad film,negative\n'},
        "t.csv: line 3 starts a quoted field that runs to line 5",
    ),
    (
        "unquoted delimiter",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": "text,label\ngood film,positive\ndull, slow film,negative\n"},
        "t.csv: line 3 has 3 fields, the header has 2",
    ),
    (
        "null label (JSON Lines)",
        "train_classifier",
        ["--train_file", "{tmp}/t.jsonl", *TRAIN],
        {"t.jsonl": '{"text": "a", "label": "x"}\n\n{"text": "b", "label": null}\n'},
        "t.jsonl: line 3 has an empty label",
    ),
    (
        "empty label (CSV)",
        "train_classifier",
        ["--train_file", "{tmp}/t.csv", *TRAIN],
        {"t.csv": "text,label\na,x\nb,y\nc,\n"},
        "t.csv: line 4 has an empty label",
    ),
    (
        "label field missing in a later row",
        "train_classifier",
        ["--train_file", "{tmp}/t.jsonl", *TRAIN],
        {"t.jsonl": '{"text": "a", "label": "x"}\n{"text": "b"}\n'},
        "t.jsonl: line 2 has no 'label' field",
    ),
    (
        "null label in validation",
        "train_classifier",
        [
            "--train_file",
            "{train}",
            "--validation_file",
            "{tmp}/v.jsonl",
            "--model_name_or_path",
            "{model}",
            "--output_dir",
            "{out}",
        ],
        {"v.jsonl": '{"text": "a", "label": "positive"}\n{"text": "b", "label": null}\n'},
        "v.jsonl: line 2 has an empty label",
    ),
    # ---- flags and config files ----------------------------------------------------------------
    *[
        (f"--{flag} {value}", "train_classifier", ["--train_file", "{train}", *TRAIN, f"--{flag}", value], {}, message)
        for flag, value, message in [
            ("learning_rate", "nan", "--learning_rate must be a finite number; got nan"),
            ("learning_rate", "inf", "--learning_rate must be a finite number; got inf"),
            ("weight_decay", "nan", "--weight_decay must be a finite number"),
            ("max_grad_norm", "nan", "--max_grad_norm must be a finite number"),
            ("learning_rate", "0", "--learning_rate must be > 0"),
            ("warmup_ratio", "1.0", "--warmup_ratio must be in [0, 1)"),
            ("max_length", "0", "--max_length must be > 0"),
            ("batch_size", "0", "--batch_size must be > 0"),
            ("max_steps", "0", "--max_steps must be > 0"),
            ("local_sgd_steps", "-1", "--local_sgd_steps must be >= 0"),
            ("warmup_steps", "-1", "--warmup_steps must be >= 0"),
            ("optimizer", "sgd", "invalid choice: 'sgd'"),
            ("metric_for_best_model", "auc", "--metric_for_best_model/--metric-for-best-model: invalid choice: 'auc'"),
            ("label_column", "", "--label_column must be a column name"),
        ]
    ],
    (
        "--label_names with one name",
        "train_classifier",
        ["--train_file", "{train}", *TRAIN, "--label_names", "a"],
        {},
        "--label_names needs at least two distinct names",
    ),
    (
        "warm-up longer than the run",
        "train_classifier",
        ["--train_file", "{train}", *TRAIN, "--warmup_steps", "50", "--max_steps", "10"],
        {},
        "--warmup_steps 50 must be smaller than the 10 optimizer updates",
    ),
    (
        "warm-up longer than the epochs",
        "train_classifier",
        ["--train_file", "{train}", *TRAIN, "--warmup_steps", "5"],
        {},
        "--warmup_steps 5 must be smaller than the 3 optimizer updates",
    ),
    (
        "YAML learning_rate .nan",
        "train_classifier",
        ["--config", "{tmp}/c.yaml", "--train_file", "{train}", *TRAIN],
        {"c.yaml": "learning_rate: .nan\n"},
        "c.yaml: --learning_rate must be a finite number; got nan",
    ),
    (
        "YAML unknown key",
        "train_classifier",
        ["--config", "{tmp}/c.yaml", "--train_file", "{train}", *TRAIN],
        {"c.yaml": "learning_rat: 0.1\n"},
        "c.yaml: unknown key(s) learning_rat",
    ),
    ("unknown flag", "train_classifier", ["--train_file", "{train}", *TRAIN, "--lr", "1"], {}, "unknown flag --lr"),
    # ---- predict.py ------------------------------------------------------------------------------
    (
        "predict: no model folder",
        "predict",
        ["--model", "{tmp}/nope", "--text", "a"],
        {},
        "--model {tmp}/nope: no such folder",
    ),
    (
        "predict: not a classifier folder",
        "predict",
        ["--model", "{tmp}/m", "--text", "a"],
        {"m/notes.txt": "x"},
        "--model {tmp}/m: not a saved classifier",
    ),
    (
        "predict: text and input file",
        "predict",
        ["--model", "{model}", "--text", "a", "--input_file", "{train}"],
        {},
        "pass exactly one of --text",
    ),
    (
        "predict: output suffix",
        "predict",
        ["--model", "{model}", "--text", "a", "--output_file", "{tmp}/p.txt"],
        {},
        "--output_file {tmp}/p.txt: use a .csv or .jsonl name",
    ),
    (
        "predict: missing input",
        "predict",
        ["--model", "{model}", "--input_file", "{tmp}/in.txt"],
        {},
        "in.txt: file not found",
    ),
    (
        "predict: empty input",
        "predict",
        ["--model", "{model}", "--input_file", "{tmp}/in.txt"],
        {"in.txt": "\n\n"},
        "in.txt: the file is empty",
    ),
    (
        "predict: input column",
        "predict",
        ["--model", "{model}", "--input_file", "{train}", "--text_column", "body"],
        {},
        "no column 'body'",
    ),
    (
        "predict: output under a file",
        "predict",
        ["--model", "{model}", "--text", "a", "--output_file", "{tmp}/notes.txt/p.csv"],
        {"notes.txt": "mine"},
        "--output_file {tmp}/notes.txt/p.csv: cannot write it",
    ),
    (
        "predict: output is a folder",
        "predict",
        ["--model", "{model}", "--text", "a", "--output_file", "{tmp}/d.csv"],
        {"d.csv/keep.txt": "mine"},
        "--output_file {tmp}/d.csv: exists and is not a writable file",
    ),
    (
        "predict: output is the input",
        "predict",
        ["--model", "{model}", "--input_file", "{train}", "--output_file", "{train}"],
        {},
        "--output_file {train}: is the same as --input_file {train}",
    ),
    (
        "predict: output is the input via ..",
        "predict",
        ["--model", "{model}", "--input_file", "{train}", "--output_file", "{tmp}/out/../data/train.csv"],
        {},
        "is the same as --input_file {train}",
    ),
    (
        "predict: batch size",
        "predict",
        ["--model", "{model}", "--text", "a", "--batch_size", "0"],
        {},
        "--batch_size must be > 0",
    ),
    # ---- a model folder without its tokenizer (issue 21 item 2) ----------------------------------
    (
        "no tokenizer: train",
        "train_classifier",
        [
            "--train_file",
            "{train}",
            "--validation_file",
            "{val}",
            "--model_name_or_path",
            "{notok}",
            "--output_dir",
            "{out}",
        ],
        {},
        "--model_name_or_path {notok}: no tokenizer files",
    ),
    (
        "no tokenizer: predict",
        "predict",
        ["--model", "{notok}", "--text", "a good film"],
        {},
        "--model {notok}: no tokenizer files",
    ),
    (
        "no tokenizer: teacher",
        "distill_classifier",
        ["--train_file", "{train}", *DISTIL, "{notok}", "--student_from_teacher"],
        {},
        "--teacher_model_name_or_path {notok}: no tokenizer files",
    ),
    (
        "no tokenizer: student",
        "distill_classifier",
        ["--train_file", "{train}", *DISTIL, "{teacher}", "--student_model_name_or_path", "{notok}"],
        {},
        "--student_model_name_or_path {notok}: no tokenizer files",
    ),
    # ---- --max_length against the tokenizer and the model (issue 21 item 6; the tiny model reads 64 tokens) --------
    (
        "--max_length below the special tokens: train",
        "train_classifier",
        ["--train_file", "{train}", *TRAIN, "--max_length", "2"],
        {},
        "--max_length 2 leaves no room for text",
    ),
    (
        "--max_length above the positions: train",
        "train_classifier",
        ["--train_file", "{train}", *TRAIN, "--max_length", "1000"],
        {},
        "--max_length 1000 is longer than the model can read (64",
    ),
    (
        "--max_length below the special tokens: predict",
        "predict",
        ["--model", "{model}", "--text", "a", "--max_length", "1"],
        {},
        "--max_length 1 leaves no room for text",
    ),
    (
        "--max_length above the positions: predict",
        "predict",
        ["--model", "{model}", "--text", "a", "--output_file", "{tmp}/new/p.csv", "--max_length", "100000"],
        {},
        "--max_length 100000 is longer than the model can read (64",
    ),
    (
        "--max_length below the special tokens: distil",
        "distill_classifier",
        ["--train_file", "{train}", *DISTIL, "{teacher}", "--student_from_teacher", "--max_length", "1"],
        {},
        "--max_length 1 leaves no room for text",
    ),
    (
        "--max_length above the positions: distil",
        "distill_classifier",
        [
            "--train_file",
            "{train}",
            *DISTIL,
            "{teacher}",
            "--student_model_name_or_path",
            "{model}",
            "--max_length",
            "65",
        ],
        {},
        "--max_length 65 is longer than the model can read (64",
    ),
    # ---- make_tiny_model.py ------------------------------------------------------------------
    (
        "tiny: missing corpus",
        "make_tiny_model",
        ["--train_file", "{tmp}/nope.csv", "--output_dir", "{out}"],
        {},
        "nope.csv: file not found",
    ),
    (
        "tiny: no text column",
        "make_tiny_model",
        ["--train_file", "{tmp}/t.csv", "--output_dir", "{out}"],
        {"t.csv": "body,label\na,x\n"},
        "no column 'text'",
    ),
    # ---- distillation: the classifier's checks, before the run folder is touched (issue 20) -----
    (
        "distill: warm-up longer than the run",
        "distill_classifier",
        [
            "--train_file",
            "{train}",
            "--validation_file",
            "{val}",
            "--teacher_model_name_or_path",
            "{model}",
            "--student_from_teacher",
            "--output_dir",
            "{out}",
            "--max_steps",
            "2",
            "--warmup_steps",
            "5",
        ],
        {},
        "--warmup_steps 5 must be smaller than the 2 optimizer updates",
    ),
    (
        "tiny: heads do not divide dim",
        "make_tiny_model",
        ["--train_file", "{train}", "--output_dir", "{out}", "--dim", "32", "--n_heads", "3"],
        {},
        "--n_heads 3 must divide --dim 32",
    ),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "corpus.csv").write_text(GOOD_TRAIN)
    return make_tiny(folder / "model", folder / "corpus.csv")


@pytest.fixture(scope="module")
def models(tiny) -> dict:
    """The tiny model; a "teacher" (the same with the data's labels in its config); and that teacher
    without its tokenizer files (config.json and model.safetensors only)."""
    teacher = tiny.parent / "teacher"
    shutil.copytree(tiny, teacher)
    config = json.loads((teacher / "config.json").read_text())
    config.update(id2label={"0": "negative", "1": "positive"}, label2id={"negative": 0, "positive": 1})
    (teacher / "config.json").write_text(json.dumps(config))
    notok = tiny.parent / "notok"
    notok.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy2(teacher / name, notok / name)
    return {"model": str(tiny), "teacher": str(teacher), "notok": str(notok)}


def snapshot(*roots: Path) -> dict:
    """Every path under the roots -> (kind, bytes, mtime) of files; folders by presence."""
    found = {}
    for root in roots:
        for p in [root, *root.rglob("*")]:
            found[str(p)] = ("dir",) if p.is_dir() else ("file", p.read_bytes(), p.stat().st_mtime_ns)
    return found


def workspace(tmp_path: Path, files: dict) -> dict:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text(GOOD_TRAIN)
    write_rows(tmp_path / "data" / "validation.jsonl", make_rows(6, seed=2))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("a user's notes: must survive every failed run\n")
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return {
        "tmp": str(tmp_path),
        "train": str(tmp_path / "data" / "train.csv"),
        "val": str(tmp_path / "data" / "validation.jsonl"),
        "out": str(tmp_path / "out"),
    }


@pytest.mark.parametrize("name,script,argv,files,match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(
    tmp_path, models, capsys, monkeypatch, name, script, argv, files, match
):
    # No hub look-ups: an uncached model name fails at once, as on an offline machine, instead of
    # waiting for network retries (huggingface_hub reads HF_HUB_OFFLINE at import time).
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    places = {**workspace(tmp_path, files), **models}
    before = snapshot(tmp_path, Path(models["model"]).parent)
    reset_accelerate()
    line = one_line_error(load_script(script).main, [a.format(**places) for a in argv], capsys)
    assert match.format(**places) in line, line
    assert snapshot(tmp_path, Path(models["model"]).parent) == before


def test_predict_output_on_a_read_only_file_system(tmp_path, tiny, capsys, monkeypatch):
    # The process runs as root here (permission bits do not stop it), so the file system's answer
    # is injected where predict.py opens its output.
    import gan_accel.classifier.predict as predict_module

    def read_only(path, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    places = workspace(tmp_path, {"preds.csv": "text,label,score\nan earlier result,x,1.0\n"})
    before = snapshot(tmp_path, tiny)
    monkeypatch.setattr(predict_module, "open", read_only, raising=False)
    line = one_line_error(
        load_script("predict").main,
        ["--model", str(tiny), "--text", "a b", "--output_file", f"{places['tmp']}/preds.csv"],
        capsys,
    )
    assert f"--output_file {places['tmp']}/preds.csv: cannot write it (Read-only file system)" in line
    assert snapshot(tmp_path, tiny) == before


@pytest.mark.skipif(sys.platform == "win32" or __import__("os").geteuid() == 0, reason="root ignores permission bits")
def test_predict_output_in_a_read_only_folder(tmp_path, tiny, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        line = one_line_error(
            load_script("predict").main,
            ["--model", str(tiny), "--text", "a", "--output_file", str(folder / "p.csv")],
            capsys,
        )
    finally:
        folder.chmod(0o755)
    assert "cannot write it" in line and not list(folder.iterdir())
