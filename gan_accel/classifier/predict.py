"""Predictions of an exported classifier folder: label and score per text, to CSV or JSON Lines."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from .. import interrupt
from ..config.fields import check_positive
from ..data.length_grouped import longest_first, restore_order
from ..errors import ConfigError, UserError
from .model import check_max_length, check_tokenizer
from .table import check_rows, read_table


@dataclass
class PredictArguments:
    """What to predict and where the answers go."""

    model: str = field(
        metadata={"help": "Model folder written by gan-accel train-classifier (OUTPUT_DIR/model) or save_pretrained."}
    )
    text: Optional[List[str]] = field(default=None, metadata={"help": "One or more texts to classify."})
    input_file: Optional[str] = field(
        default=None,
        metadata={"help": "Texts to classify: .txt (one per line) or .csv/.tsv/.jsonl with --text_column."},
    )
    text_column: str = field(default="text", metadata={"help": "Column of --input_file holding the text."})
    output_file: Optional[str] = field(
        default=None,
        metadata={"help": "Where to write rows (text, label, score): .csv or .jsonl; default JSON Lines on stdout."},
    )
    batch_size: int = field(default=32, metadata={"help": "Texts per forward pass."})
    max_length: Optional[int] = field(
        default=None,
        metadata={
            "help": "Truncate texts to this many tokens (default: the longest the model reads, from its position "
            "embeddings and tokenizer)."
        },
    )
    cpu: bool = field(default=False, metadata={"help": "Run on the CPU even when a GPU is present."})

    def __post_init__(self) -> None:
        if bool(self.text) == bool(self.input_file):
            raise ConfigError('pass exactly one of --text "..." (one or more) or --input_file FILE')
        if self.output_file and not self.output_file.lower().endswith((".csv", ".jsonl")):
            raise ConfigError(f"--output_file {self.output_file}: use a .csv or .jsonl name")
        check_positive("batch_size", self.batch_size)
        check_positive("max_length", self.max_length)


def read_texts(args: PredictArguments) -> List[str]:
    if args.text:
        return list(args.text)
    path = Path(args.input_file)
    if path.suffix.lower() == ".txt":
        if not path.is_file():
            raise UserError(f"--input_file {path}: file not found")
        try:
            lines = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as err:
            raise UserError(f"--input_file {path}: unreadable ({err})") from None
        if not lines:
            raise UserError(f"--input_file {path}: the file is empty")
        return lines
    rows = read_table(str(path), "input_file")
    if args.text_column not in rows[0]:
        raise UserError(
            f"--input_file {path}: no column {args.text_column!r} (columns: {', '.join(rows[0])}); set --text_column"
        )
    check_rows(rows, [args.text_column], None, f"--input_file {path}")
    return ["" if r[args.text_column] is None else str(r[args.text_column]) for r in rows]


def load_classifier(folder: str, max_length: Optional[int] = None):
    """``(tokenizer, config, max_length)`` of a model folder, checked (tokenizer files, ``--max_length``
    against the tokenizer and the position embeddings; None becomes the model's limit) before any
    weights are read or anything is written."""
    from transformers import AutoConfig, AutoTokenizer

    if not Path(folder).is_dir():
        raise UserError(f"--model {folder}: no such folder; pass OUTPUT_DIR/model of a training run")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        config = AutoConfig.from_pretrained(folder)
    except (OSError, ValueError) as err:
        raise UserError(f"--model {folder}: not a saved classifier ({str(err).splitlines()[0]})") from None
    check_tokenizer("model", folder, tokenizer)
    return tokenizer, config, check_max_length(max_length, tokenizer, [config])


def load_weights(folder: str, config, device: str):
    from transformers import AutoModelForSequenceClassification

    try:
        model = AutoModelForSequenceClassification.from_pretrained(folder, config=config)
    except (OSError, ValueError) as err:
        raise UserError(f"--model {folder}: not a saved classifier ({str(err).splitlines()[0]})") from None
    return model.to(device).eval()


def predict(args: PredictArguments) -> List[dict]:
    """One row per text, in input order. Texts are tokenised once, then run longest first so each
    batch pads to little more than its own texts (a long text no longer inflates a batch of short
    ones); the rows are put back in input order at the end."""
    import torch

    texts = read_texts(args)
    tokenizer, config, max_length = load_classifier(args.model, args.max_length)
    check_output_file(args.output_file)
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    model = load_weights(args.model, config, device)
    encoded = tokenizer(texts, truncation=max_length is not None, max_length=max_length)["input_ids"]
    order = longest_first([len(ids) for ids in encoded])
    rows = []
    for start in range(0, len(order), args.batch_size):
        interrupt.phase("predict")
        chunk = order[start : start + args.batch_size]
        enc = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt").to(device)
        ids, scores = top_labels(model, enc)
        rows += [
            {"text": texts[t], "label": model.config.id2label[i], "score": s} for t, i, s in zip(chunk, ids, scores)
        ]
    return restore_order(rows, order)


def top_labels(model, batch) -> Tuple[List[int], List[float]]:
    """The most probable class of each text of ``batch`` (tokenised, on the model's device) and its
    probability: softmax in float32, whatever precision the logits come in. The run's recorded
    validation examples (:func:`.evaluate.validation_examples`) are scored by this too."""
    import torch

    with torch.no_grad():
        probs = model(**batch).logits.float().softmax(dim=-1)  # [B, num_labels]
    scores, ids = probs.max(dim=-1)
    return ids.tolist(), scores.tolist()


def check_output_file(output_file: Optional[str]) -> None:
    """Fail before the model loads and the texts are scored: create the folder and a scratch file
    where the predictions will be written, then remove the scratch file."""
    if output_file is None:
        return
    path = Path(output_file)
    if path.exists() and not (path.is_file() and os.access(path, os.W_OK)):
        raise UserError(f"--output_file {output_file}: exists and is not a writable file; choose another path")
    with _writing(path) as tmp:
        path.parent.mkdir(parents=True, exist_ok=True)
        open(tmp, "w").close()
        tmp.unlink()


@contextlib.contextmanager
def _writing(path: Path):
    """Yield the scratch file next to ``path``; an OS error (read-only, full disk, a file where a
    folder should be) becomes one line and the scratch file is removed."""
    tmp = path.with_name(f".tmp-{path.name}")
    try:
        yield tmp
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise UserError(
            f"--output_file {path}: cannot write it ({err.strerror or err}); choose a writable path"
        ) from None


def write_predictions(rows: List[dict], output_file: Optional[str]) -> None:
    if output_file is None:
        for row in rows:
            sys.stdout.write(json.dumps(row) + "\n")
        return
    path = Path(output_file)
    check_output_file(output_file)
    # Written next to the target, then renamed over it: a failure half-way (full disk) leaves an
    # earlier file of that name intact instead of truncated.
    from ..loop.atomic import atomic_file

    with atomic_file(path, "predictions") as tmp:
        with open(tmp, "w", newline="") as f:
            if path.suffix.lower() == ".jsonl":
                f.write("".join(json.dumps(r) + "\n" for r in rows))
            else:
                writer = csv.DictWriter(f, fieldnames=["text", "label", "score"])
                writer.writeheader()
                writer.writerows(rows)
