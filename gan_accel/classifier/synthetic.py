"""A generated, learnable sentiment corpus (offline): used by the tests and the benchmark.

Sentiment is decided by a majority of cue words among distractors: every sentence holds three
cues, positive and negative mixed (2-1 or 3-0), so no single token decides the label; a model
must weigh all three. Labels are strings.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

POSITIVE = ["good", "great", "excellent", "wonderful", "brilliant", "lovely"]
NEGATIVE = ["bad", "awful", "terrible", "boring", "dull", "poor"]
NEUTRAL = (
    "the a this that movie film plot actor actress scene story ending music camera script director "
    "cast was is were felt seemed quite rather very and but with of in on at it its their our".split()
)
LABELS = ["negative", "positive"]


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
    return {
        "train": write_rows(folder / "train.csv", make_rows(n_train, seed=1)),
        "validation": write_rows(folder / "validation.jsonl", make_rows(n_val, seed=2)),
    }


def main(argv=None) -> int:
    """``python -m gan_accel.classifier.synthetic --output_dir DIR [--n_train N --n_val M]``:
    write DIR/train.csv and DIR/validation.jsonl (for smoke runs and the README's examples)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--output_dir", required=True, help="Folder for train.csv and validation.jsonl.")
    parser.add_argument("--n_train", type=int, default=480, help="Training sentences.")
    parser.add_argument("--n_val", type=int, default=101, help="Validation sentences.")
    args = parser.parse_args(argv)
    files = make_corpus(Path(args.output_dir), args.n_train, args.n_val)
    print(f"wrote {files['train']} and {files['validation']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
