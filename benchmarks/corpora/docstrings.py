"""A corpus of real, variable-length text that nobody here wrote, built offline: the docstrings of
Python's standard library, labelled by the package they document.

The text ships with every Python (read from the installed standard library's source with ``ast``,
nothing imported or downloaded), and it has the length profile of real text: most docstrings are
one line, some run to pages, so a random batch is mostly padding unless batches are grouped by
length. The task (which package does this docstring document?) is learnable from the wording
(``loop``, ``future`` and ``await``; ``header`` and ``MIME``; ``widget``; ...), so a speed
comparison can also compare final accuracy. Used by the benchmark; reusable by anyone who needs
real text offline::

    python -m benchmarks.classifier docstrings --output_dir data/docstrings
"""

from __future__ import annotations

import ast
import random
import sysconfig
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from gan_accel.classifier.synthetic import write_rows

# label -> standard-library packages (folders) whose docstrings carry it: packages whose wording
# is their own. Left out: packages that mostly re-describe another one (idlelib is a tkinter
# application; multiprocessing mirrors threading's and concurrent's vocabulary) and, to keep the
# benchmark a few minutes per run on a CPU, some distinct ones (http, urllib, importlib). Under
# CPython 3.11: 170-740 unique docstrings per label, ~2,070 in all.
PACKAGES: Dict[str, Tuple[str, ...]] = {
    "asyncio": ("asyncio", "concurrent"),
    "email": ("email",),
    "logging": ("logging",),
    "tkinter": ("tkinter",),
    "unittest": ("unittest",),
    "xml": ("xml",),
}
MIN_WORDS = 3  # "Return self." and the like say nothing about their package


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


TEST_FOLDERS = ("test", "tests", "idle_test")
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def file_docstrings(path: Path, kinds: Tuple[type, ...] = (ast.Module, *DEFINITIONS)) -> List[str]:
    """Docstrings of the ``kinds`` of nodes in one source file, read with ``ast`` (nothing imported
    or executed), in source order, whitespace collapsed to single spaces (one row per docstring in
    CSV/JSONL); [] for a file that cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    docs = (ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds))
    return [" ".join(doc.split()) for doc in docs if doc]


def docstrings_of(folder: Path) -> List[str]:
    """Docstrings of every module, class and function under ``folder`` (tests excluded), in a
    stable order."""
    return [
        doc
        for path in sorted(folder.rglob("*.py"))
        if not any(part in TEST_FOLDERS for part in path.relative_to(folder).parts)
        for doc in file_docstrings(path)
    ]


def make_docstring_rows(root: Optional[Path] = None, packages: Dict[str, Sequence[str]] = PACKAGES) -> List[dict]:
    """``[{"text", "label"}]``: each docstring once, under its label. A docstring found under two
    labels (shared boilerplate) is dropped: it could not be classified."""
    root = Path(root) if root else stdlib_dir()
    labels_of: Dict[str, set] = {}
    for label, folders in packages.items():
        for name in folders:
            if (root / name).is_dir():
                for doc in docstrings_of(root / name):
                    if len(doc.split()) >= MIN_WORDS:
                        labels_of.setdefault(doc, set()).add(label)
    return [{"text": doc, "label": next(iter(labels))} for doc, labels in labels_of.items() if len(labels) == 1]


def split_rows(rows: List[dict], validation_share: float, seed: int) -> Tuple[List[dict], List[dict]]:
    """A seeded split stratified by label (every label keeps the same share in both)."""
    rng = random.Random(seed)
    train, validation = [], []
    for label in sorted({r["label"] for r in rows}):
        group = [r for r in rows if r["label"] == label]
        rng.shuffle(group)
        cut = round(len(group) * validation_share)
        validation += group[:cut]
        train += group[cut:]
    rng.shuffle(train)
    rng.shuffle(validation)
    return train, validation


def make_docstring_corpus(folder: Path, validation_share: float = 0.2, seed: int = 0) -> dict:
    """Write ``folder/train.csv`` and ``folder/validation.jsonl``; returns their paths."""
    rows = make_docstring_rows()
    if len({r["label"] for r in rows}) < 3:
        raise RuntimeError(f"the standard library under {stdlib_dir()} has too few documented packages for a corpus")
    train, validation = split_rows(rows, validation_share, seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "train": write_rows(folder / "train.csv", train),
        "validation": write_rows(folder / "validation.jsonl", validation),
    }


def main(argv=None) -> int:
    """``python -m benchmarks.classifier docstrings --output_dir DIR``: write DIR/train.csv and
    DIR/validation.jsonl from this Python's standard library."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="Folder for train.csv and validation.jsonl.")
    parser.add_argument("--validation_share", type=float, default=0.2, help="Share of each label held out.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the split.")
    args = parser.parse_args(argv)
    files = make_docstring_corpus(Path(args.output_dir), args.validation_share, args.seed)
    print(f"wrote {files['train']} and {files['validation']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
