"""The project's measurements, kept outside the installed package: run from a checkout as
``python -m benchmarks.bench`` (the toolkit's loops against a plain PyTorch loop and
``transformers.Trainer``, and sampling), ``benchmarks.bench_knobs`` (the efficiency flags),
``benchmarks.bench_data`` (in memory against streamed images) and ``benchmarks.bench_distill``.
The real-text corpora they train on (``docstrings``, ``stdlib_corpus``) are built offline from the
installed Python's standard library. Figures are medians with their spread; docs/benchmarks.md
holds the tables, benchmarks/results/ the JSON files behind them."""
