"""The project's measurements, kept outside the installed package; run from a checkout, one entry
per question (docs/benchmarks.md has the table: question -> command -> the doc table it produces):

    python -m benchmarks.speed COMMAND        loops, arch, progressive, knobs, cache_open
    python -m benchmarks.photos COMMAND       equal_time, panel, along, folder
    python -m benchmarks.data                 image data in memory against streamed
    python -m benchmarks.classifier COMMAND   distill, docstrings, stdlib_corpus
    python -m benchmarks.digits_judge         an independent judge of digits generators

Shared pieces: common.py (threads, timers, statistics), contenders/ (the loops timed against each
other), corpora/ (the real-text corpora, built offline from the standard library), entry.py (the
commands' front). Figures are medians with their spread; benchmarks/results/ holds the JSON files
behind the tables.
"""
