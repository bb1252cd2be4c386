"""Distillation end to end on the synthetic corpus with tiny models made offline: the student
learns the teacher's predictions, the teacher never changes, the exported student loads in
``pipeline`` and ``scripts/predict.py``, each loss term is wired, and a mismatched teacher or
student is refused with one line before anything is written."""

import importlib
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from classifier_fixtures import load_script, make_tiny, read_jsonl, single_thread, write_rows  # noqa: E402
from distill_fixtures import distill_argv, distill_in_process, make_teacher  # noqa: E402
from helpers import GRADIENT_LEAK
from helpers import one_line_error as user_error

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)
distill_main = load_script("distill_classifier").main


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_teacher(tmp_path_factory.mktemp("distill"))


@pytest.fixture(scope="module")
def distilled(setup):
    """A 1-layer student made from the 2-layer teacher, distilled for 3 epochs (logits cached)."""
    teacher_before = load_file(str(setup["teacher"] / "model.safetensors"))
    out = distill_in_process(
        distill_argv(
            setup,
            setup["folder"] / "student",
            "--student_from_teacher",
            "--student_layers",
            "1",
            "--num_train_epochs",
            "3",
            "--cache_teacher_logits",
        )
    )
    return out, teacher_before


def test_student_agrees_with_the_teacher(distilled):
    out, _ = distilled
    results = json.loads((out / "eval_results.json").read_text())
    final = results["student"]["final"]
    assert final["eval/agreement"] >= 0.9, final
    assert final["eval/samples"] == results["teacher"]["eval/samples"] == 101
    assert results["teacher"]["eval/accuracy"] >= 0.9  # a teacher worth distilling
    assert results["parameters"]["student"] < results["parameters"]["teacher"]
    assert results["steps"] == 90 and results["final_lr"] == 0.0  # 480 / 16 = 30 updates an epoch
    assert results["cache_teacher_logits"] and not results["teacher_cache_reused"]
    logged = [r for r in read_jsonl(out / "metrics.jsonl") if "loss/kd" in r]
    assert logged and all("loss/ce" in r and "loss/train" in r for r in logged)


def test_teacher_weights_unchanged(setup, distilled):
    out, before = distilled
    after = load_file(str(setup["teacher"] / "model.safetensors"))
    in_checkpoint = load_file(str(out / "checkpoints" / "step_00000090" / "model_1.safetensors"))  # the teacher
    assert before.keys() == after.keys()
    for key in before:
        assert torch.equal(before[key], after[key]), key
        assert torch.equal(before[key], in_checkpoint[key]), key
    student = load_file(str(out / "checkpoints" / "step_00000090" / "model.safetensors"))
    assert not torch.equal(student["classifier.weight"], before["classifier.weight"])  # the student did train


def test_exported_student_loads_in_pipeline_and_predict(distilled, tmp_path, capsys):
    from transformers import AutoModelForSequenceClassification, pipeline

    out, _ = distilled
    model = AutoModelForSequenceClassification.from_pretrained(out / "model")
    assert model.config.n_layers == 1 and model.config.id2label == {0: "negative", 1: "positive"}
    classify = pipeline("text-classification", model=str(out / "model"))
    assert {r["label"] for r in classify(["good great wonderful film", "bad awful boring film"])} <= {
        "negative",
        "positive",
    }
    capsys.readouterr()
    assert load_script("predict").main(["--model", str(out / "model"), "--text", "a good great and lovely plot"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[0])["label"] in ("negative", "positive")


@pytest.mark.parametrize(
    "flags,logged,absent",
    [
        (["--alpha_kd", "0", "--alpha_ce", "1"], {"loss/ce"}, {"loss/kd", "loss/cos"}),  # labels only (the ablation)
        (["--alpha_kd", "1", "--alpha_ce", "0", "--alpha_cos", "1"], {"loss/kd", "loss/cos"}, {"loss/ce"}),
        (
            ["--mixed_precision", "bf16", "--cache_teacher_logits"],
            {"loss/kd", "loss/ce"},
            {"loss/cos"},
        ),  # autocast on CPU
        (["--gradient_checkpointing"], {"loss/kd", "loss/ce"}, {"loss/cos"}),
    ],
)
def test_each_loss_term_is_wired(setup, tmp_path, flags, logged, absent):
    out = distill_in_process(
        distill_argv(setup, tmp_path / "run", "--student_from_teacher", "--max_steps", "4", "--log_every", "2", *flags)
    )
    record = read_jsonl(out / "metrics.jsonl")[0]
    assert logged <= record.keys() and not absent & record.keys(), record


def test_student_from_its_own_checkpoint(setup, tmp_path, capsys):
    # The untrained tiny DistilBERT shares the teacher's tokenizer: a fresh head is drawn for it.
    out = distill_in_process(
        distill_argv(setup, tmp_path / "run", "--student_model_name_or_path", str(setup["tiny"]), "--max_steps", "3")
    )
    assert json.loads((out / "eval_results.json").read_text())["student"]["final"]["eval/samples"] == 101
    assert GRADIENT_LEAK not in capsys.readouterr().out  # the teacher has no optimizer: its gradients train nothing


# ---- refused before anything is written -------------------------------------------------------
def refused(argv, capsys, out: Path) -> str:
    capsys.readouterr()  # what the test's own set-up printed
    line = user_error(distill_main, argv, capsys)
    assert not out.exists()  # the run folder was never created
    return line


def test_label_set_mismatch_is_one_line(setup, tmp_path, capsys):
    rows = [{"text": "good film", "label": lab} for lab in ("positive", "negative", "neutral")] * 4
    data = {
        "train": write_rows(tmp_path / "three.csv", rows),
        "validation": write_rows(tmp_path / "three_val.csv", rows),
    }
    argv = distill_argv({**setup, "corpus": data}, tmp_path / "out", "--student_from_teacher")
    assert "its labels ['negative', 'positive'] differ from the data's ['negative', 'neutral', 'positive']" in refused(
        argv, capsys, tmp_path / "out"
    )
    argv = distill_argv(setup, tmp_path / "out", "--student_from_teacher", "--label_names", "positive", "negative")
    assert "are the data's in another order" in refused(argv, capsys, tmp_path / "out")


def test_vocabulary_mismatch_is_one_line(setup, tmp_path, capsys):
    rows = [{"text": f"completely unrelated words number {i} zebra quartz", "label": "x"} for i in range(20)]
    other = make_tiny(tmp_path / "other", write_rows(tmp_path / "other.csv", rows))
    line = refused(
        distill_argv(setup, tmp_path / "out", "--student_model_name_or_path", str(other)), capsys, tmp_path / "out"
    )
    assert line.startswith(f"error: --student_model_name_or_path {other}: its tokenizer vocabulary")


@pytest.mark.parametrize(
    "flags,match",
    [
        (
            ["--student_from_teacher", "--student_layers", "3"],
            "--student_layers 3: must be between 1 and the teacher's 2",
        ),
        (
            ["--student_from_teacher", "--cache_teacher_logits", "--alpha_cos", "1"],
            "cannot be combined with --alpha_cos",
        ),
        ([], "pass exactly one of --student_model_name_or_path or --student_from_teacher"),
        (
            ["--student_from_teacher", "--teacher_model_name_or_path", "no/such/folder"],
            "--teacher_model_name_or_path no/such/folder: could not load its tokenizer",
        ),
    ],
)
def test_bad_flags_are_one_line(setup, tmp_path, capsys, flags, match):
    assert match in refused(distill_argv(setup, tmp_path / "out", *flags), capsys, tmp_path / "out")


def test_help_lists_the_distillation_flags(capsys):
    with pytest.raises(SystemExit) as info:
        distill_main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for flag in (
        "--teacher_model_name_or_path",
        "--student_from_teacher",
        "--student_layers",
        "--alpha_kd",
        "--alpha_ce",
        "--alpha_cos",
        "--temperature",
        "--cache_teacher_logits",
        "--train_file",
        "--max_length",
    ):
        assert flag in text, flag


def test_divergence_stops_with_one_line_and_keeps_only_finite_checkpoints(setup, tmp_path):
    from gan_accel.loop.guard import NonFiniteError

    out = tmp_path / "run"
    argv = distill_argv(
        setup,
        out,
        "--student_from_teacher",
        "--max_steps",
        "30",
        "--checkpointing_steps",
        "2",
        "--log_every",
        "1",
        "--max_nonfinite_steps",
        "2",
        "--learning_rate",
        "1e10",
    )
    with pytest.raises(NonFiniteError, match="non-finite") as info:  # a UserError: one line from the script
        distill_in_process(argv)
    assert "\n" not in str(info.value)
    saved = sorted(p.name for p in (out / "checkpoints").iterdir() if p.name.startswith("step_"))
    for name in saved:  # whatever was written is finite
        weights = load_file(str(out / "checkpoints" / name / "model.safetensors"))
        assert all(torch.isfinite(v).all() for v in weights.values()), name
    assert any("nonfinite/skipped_total" in r for r in read_jsonl(out / "metrics.jsonl"))
    if (out / "model").is_dir():  # an export, if any, is of a sound student
        exported = load_file(str(out / "model" / "model.safetensors"))
        assert all(torch.isfinite(v).all() for v in exported.values())
        metrics = json.loads((out / "model" / "eval_results.json").read_text())
        assert all(v == v for v in metrics.values()), metrics  # no NaN


def test_bench_help_works(capsys):
    # argparse %-formats help strings: a bare percent sign in one would make --help itself fail.
    with pytest.raises(SystemExit) as info:
        importlib.import_module("benchmarks.classifier.distill").main(["--help"])
    assert info.value.code == 0 and "--speed_reps" in capsys.readouterr().out


@pytest.mark.parametrize("cache,calls", [(False, 3), (True, 0)])
def test_cached_logits_skip_the_teachers_forward_in_the_loop(setup, tmp_path, monkeypatch, cache, calls):
    from gan_accel.classifier.distill import recipe

    counted = []
    real = recipe.teacher_forward
    monkeypatch.setattr(recipe, "teacher_forward", lambda *a, **k: counted.append(1) or real(*a, **k))
    flags = ["--cache_teacher_logits"] if cache else []
    distill_in_process(distill_argv(setup, tmp_path / "run", "--student_from_teacher", "--max_steps", "3", *flags))
    assert len(counted) == calls  # one teacher forward per micro-batch, or none
