"""Fixtures of the classifier tests: a generated, learnable corpus and the tiny model built on it.

The task is sentiment decided by a majority of cue words among distractors: every sentence holds
three cues, positive and negative mixed (2-1 or 3-0), so no single token decides the label; the
model must weigh all three. Labels are strings.
"""
from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path

POSITIVE = ["good", "great", "excellent", "wonderful", "brilliant", "lovely"]
NEGATIVE = ["bad", "awful", "terrible", "boring", "dull", "poor"]
NEUTRAL = ("the a this that movie film plot actor actress scene story ending music camera script director "
           "cast was is were felt seemed quite rather very and but with of in on at it its their our".split())
LABELS = ["negative", "positive"]
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def set_offline() -> None:
    os.environ.update(OFFLINE_ENV)


set_offline()  # at import, before transformers/huggingface_hub read these variables


def make_sentence(rng: random.Random) -> tuple:
    positive = rng.random() < 0.5
    majority = POSITIVE if positive else NEGATIVE
    minority = NEGATIVE if positive else POSITIVE
    n_minority = rng.choice([0, 1, 1])
    cues = rng.sample(majority, 3 - n_minority) + rng.sample(minority, n_minority)
    words = [rng.choice(NEUTRAL) for _ in range(rng.randint(6, 12))]
    for cue in cues:
        words.insert(rng.randint(0, len(words)), cue)
    return " ".join(words), LABELS[positive]


def make_rows(n: int, seed: int) -> list:
    rng = random.Random(seed)
    return [dict(zip(("text", "label"), make_sentence(rng))) for _ in range(n)]


def write_rows(path: Path, rows: list) -> Path:
    path = Path(path)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t" if path.suffix == ".tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    return path


def make_corpus(folder: Path, n_train: int = 480, n_val: int = 101) -> dict:
    """train.csv and validation.jsonl (different formats on purpose); 101 validation rows do not
    split evenly over 2 processes."""
    folder.mkdir(parents=True, exist_ok=True)
    return {"train": write_rows(folder / "train.csv", make_rows(n_train, seed=1)),
            "validation": write_rows(folder / "validation.jsonl", make_rows(n_val, seed=2))}


def make_tiny(folder: Path, train_file: Path) -> Path:
    from gan_accel.classifier.tiny import TinyModelArguments, make_tiny_model

    return make_tiny_model(TinyModelArguments(train_file=str(train_file), output_dir=str(folder), vocab_size=500,
                                              dim=32, n_layers=2, n_heads=2, max_position_embeddings=64))


# ---- running the scripts and the library in-process ----------------------------------------
REPO = Path(__file__).resolve().parents[1]


def load_script(name: str):
    """The module of ``scripts/NAME.py`` (scripts are not a package), to call its ``main(argv)``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"script_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reset_accelerate() -> None:
    """Forget Accelerate's process-wide singletons so the next in-process run starts clean."""
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    PartialState._reset_state()


def train_argv(corpus: dict, model_dir: Path, output_dir: Path, *extra: str) -> list:
    """Flags of a fast tiny run (learning rate suited to a randomly initialised model)."""
    return ["--train_file", str(corpus["train"]), "--validation_file", str(corpus["validation"]),
            "--model_name_or_path", str(model_dir), "--output_dir", str(output_dir), "--max_length", "32",
            "--batch_size", "16", "--learning_rate", "1e-3", "--checkpointing_steps", "0", "--log_every", "5",
            *extra]


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
