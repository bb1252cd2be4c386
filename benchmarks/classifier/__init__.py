"""The classifier path: distillation (teacher, distilled student, labels only, the teacher-logit
cache) and the real-text corpora the classifier benchmarks train on (docs/benchmarks.md):

    python -m benchmarks.classifier distill --output_dir runs/bench_distill --output_json bench_distill.json
    python -m benchmarks.classifier docstrings --output_dir data/docstrings
    python -m benchmarks.classifier stdlib_corpus --output_dir data/stdlib

The toolkit's classifier loop against transformers.Trainer is timed by
``python -m benchmarks.speed loops --only classifier``; the efficiency flags by ``speed knobs``.
"""

from typing import Optional, Sequence

from benchmarks.entry import dispatch

COMMANDS = {
    "distill": ("benchmarks.classifier.distill", "teacher vs distilled student vs labels only, logit cache"),
    "docstrings": ("benchmarks.corpora.docstrings", "write the stdlib docstring corpus (6 labels)"),
    "stdlib_corpus": ("benchmarks.corpora.stdlib", "write the harder stdlib corpus (4 families)"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    return dispatch("classifier", __doc__, COMMANDS, argv)
