"""Fixtures of the classifier tests: a generated, learnable corpus and the tiny model built on it.

The task is sentiment decided by a majority of cue words among distractors: every sentence holds
three cues, positive and negative mixed (2-1 or 3-0), so no single token decides the label; the
model must weigh all three. Labels are strings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def set_offline() -> None:
    os.environ.update(OFFLINE_ENV)


set_offline()  # at import, before transformers/huggingface_hub read these variables

# The corpus generator lives in the library (the benchmark uses it too).
from gan_accel.classifier.synthetic import (  # noqa: E402,F401
    LABELS,
    NEGATIVE,
    NEUTRAL,
    POSITIVE,
    make_corpus,
    make_rows,
    make_sentence,
    write_rows,
)


def make_tiny(folder: Path, train_file: Path) -> Path:
    from gan_accel.classifier.tiny import TinyModelArguments, make_tiny_model

    return make_tiny_model(
        TinyModelArguments(
            train_file=str(train_file),
            output_dir=str(folder),
            vocab_size=500,
            dim=32,
            n_layers=2,
            n_heads=2,
            max_position_embeddings=64,
        )
    )


# ---- running the scripts and the library in-process ----------------------------------------
REPO = Path(__file__).resolve().parents[1]


# Shared with the GAN tests and the benchmark rather than written again here.
from benchmarks.common import reset_accelerate  # noqa: E402,F401
from helpers import load_script  # noqa: E402,F401


def train_argv(corpus: dict, model_dir: Path, output_dir: Path, *extra: str) -> list:
    """Flags of a fast tiny run (learning rate suited to a randomly initialised model)."""
    return [
        "--train_file",
        str(corpus["train"]),
        "--validation_file",
        str(corpus["validation"]),
        "--model_name_or_path",
        str(model_dir),
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


def train_in_process(argv: list, on_update=None) -> Path:
    from gan_accel.classifier import CLASSIFIER_CONFIG_TYPES
    from gan_accel.classifier.train import train_classifier
    from gan_accel.config import RunArguments, parse_config

    reset_accelerate()
    configs = parse_config((*CLASSIFIER_CONFIG_TYPES, RunArguments), argv)
    return train_classifier(*configs, on_update=on_update)


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def single_thread():
    """Generator for a module-scoped autouse fixture: one intra-op thread while the module runs.

    The tiny model's ops are far too small to split; on a shared 2-core machine two spinning
    threads per process made training 5-10x slower than one.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
