"""A harder, real-text classification corpus built offline from the Python standard library.

Each example is the docstring of a function or class of the stdlib's own source (read with
``ast``, nothing imported or executed), labelled with the family of the module it documents:
``gui`` (tkinter, idlelib, turtle), ``network`` (email, http, urllib, mail and the protocols),
``concurrency`` (asyncio, threading, multiprocessing, ...) or ``tooling`` (unittest, doctest,
inspect, importlib, ...). Real prose of variable length (4 to a few hundred words), a vocabulary
shared across classes (``Return``, ``object``, ``the``...) and no single cue word: harder than
the synthetic sentiment corpus, and it ships with every Python. The examples depend on the
Python version (3.11 here); ``make_corpus`` prints the counts.

    python -m benchmarks.classifier stdlib_corpus --output_dir data/stdlib
"""

from __future__ import annotations

import hashlib
import random
import sysconfig
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

from gan_accel.classifier.synthetic import write_rows

from .docstrings import DEFINITIONS, TEST_FOLDERS, file_docstrings

FAMILIES: Dict[str, tuple] = {
    "gui": ("tkinter", "idlelib", "turtle", "turtledemo"),
    "network": (
        "email",
        "http",
        "urllib",
        "mailbox",
        "imaplib",
        "smtplib",
        "poplib",
        "ftplib",
        "nntplib",
        "wsgiref",
        "xmlrpc",
        "socket",
        "socketserver",
        "ssl",
        "mimetypes",
        "webbrowser",
    ),
    "concurrency": (
        "asyncio",
        "threading",
        "multiprocessing",
        "concurrent",
        "queue",
        "subprocess",
        "sched",
        "selectors",
        "_threading_local",
        "signal",
    ),
    "tooling": (
        "unittest",
        "doctest",
        "pydoc",
        "inspect",
        "importlib",
        "pdb",
        "bdb",
        "dis",
        "trace",
        "profile",
        "cProfile",
        "pstats",
        "typing",
        "timeit",
        "tracemalloc",
        "compileall",
        "py_compile",
        "zipimport",
    ),
}
MIN_WORDS = 4


def family_of(relative: Path) -> Optional[str]:
    top = relative.parts[0].removesuffix(".py")
    if any(part in TEST_FOLDERS for part in relative.parts):
        return None
    return next((name for name, modules in FAMILIES.items() if top in modules), None)


def docstrings(path: Path) -> List[str]:
    """Docstrings of every function and class in one source file (module docstrings left out:
    they describe a whole module, not one thing), of at least ``MIN_WORDS`` words."""
    return [doc for doc in file_docstrings(path, DEFINITIONS) if len(doc.split()) >= MIN_WORDS]


def collect(stdlib: Optional[Path] = None) -> List[dict]:
    """``[{"text", "label"}]``, sorted; each distinct text once, and a text found in two families
    is dropped (its label would be arbitrary)."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    seen: Dict[str, set] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        family = "site-packages" not in relative.parts and family_of(relative)
        if family:
            for text in docstrings(path):
                seen.setdefault(text, set()).add(family)
    return [
        {"text": text, "label": next(iter(families))} for text, families in sorted(seen.items()) if len(families) == 1
    ]


def split(rows: List[dict], per_class: int, val_fraction: float, seed: int) -> Dict[str, List[dict]]:
    """At most ``per_class`` examples of each family (balanced), shuffled with ``seed``; the
    validation split is chosen by a hash of the text, so it does not move when the cap changes."""
    rng = random.Random(seed)
    by_label: Dict[str, List[dict]] = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(row)
    kept = []
    for label in sorted(by_label):
        group = by_label[label]
        rng.shuffle(group)
        kept += group[:per_class]
    rng.shuffle(kept)

    def in_val(row: dict) -> bool:  # by a hash of the text: the same split on every machine and run
        return int(hashlib.sha256(row["text"].encode()).hexdigest(), 16) % 1000 < val_fraction * 1000

    return {"train": [r for r in kept if not in_val(r)], "validation": [r for r in kept if in_val(r)]}


def make_corpus(folder: Path, per_class: int = 700, val_fraction: float = 0.2, seed: int = 0) -> dict:
    """``train.csv`` and ``validation.csv`` in ``folder``; returns their paths and the counts."""
    splits = split(collect(), per_class, val_fraction, seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    counts = {name: dict(sorted(Counter(r["label"] for r in rows).items())) for name, rows in splits.items()}
    return {
        "train": write_rows(folder / "train.csv", splits["train"]),
        "validation": write_rows(folder / "validation.csv", splits["validation"]),
        "counts": counts,
    }


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="Folder for train.csv and validation.csv.")
    parser.add_argument("--per_class", type=int, default=700, help="Examples kept per family (balanced classes).")
    parser.add_argument("--val_fraction", type=float, default=0.2, help="Share of examples in validation.csv.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the subsample and the row order.")
    args = parser.parse_args(argv)
    files = make_corpus(Path(args.output_dir), args.per_class, args.val_fraction, args.seed)
    print(f"wrote {files['train']} and {files['validation']}: {files['counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
