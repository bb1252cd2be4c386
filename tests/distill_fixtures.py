"""Fixtures of the distillation tests: a tiny teacher fine-tuned on the synthetic corpus (by the
classifier path itself), and running scripts/distill_classifier.py's library in-process."""

from __future__ import annotations

from pathlib import Path

from classifier_fixtures import make_corpus, make_tiny, reset_accelerate, train_argv, train_in_process


def make_teacher(folder: Path, epochs: int = 4) -> dict:
    """``{"corpus", "tiny", "teacher", "folder"}``: the teacher is the tiny 2-layer DistilBERT
    fine-tuned for ``epochs`` epochs (after 4 it classifies the validation set almost perfectly)."""
    corpus = make_corpus(folder / "data")
    tiny = make_tiny(folder / "tiny", corpus["train"])
    run = train_in_process(train_argv(corpus, tiny, folder / "teacher_run", "--num_train_epochs", str(epochs)))
    return {"corpus": corpus, "tiny": tiny, "teacher": run / "model", "folder": folder}


def distill_argv(setup: dict, output_dir: Path, *extra: str) -> list:
    corpus = setup["corpus"]
    return [
        "--train_file",
        str(corpus["train"]),
        "--validation_file",
        str(corpus["validation"]),
        "--teacher_model_name_or_path",
        str(setup["teacher"]),
        "--output_dir",
        str(output_dir),
        "--max_length",
        "32",
        "--batch_size",
        "16",
        "--learning_rate",
        "1e-3",
        "--checkpointing_steps",
        "0",
        "--log_every",
        "5",
        *extra,
    ]


def distill_in_process(argv: list, on_update=None):
    from gan_accel.classifier.distill import DISTILL_CONFIG_TYPES
    from gan_accel.classifier.distill.train import train_distill
    from gan_accel.config import RunArguments, parse_config

    reset_accelerate()
    configs = parse_config((*DISTILL_CONFIG_TYPES, RunArguments), argv)
    return train_distill(*configs, on_update=on_update).output_dir
