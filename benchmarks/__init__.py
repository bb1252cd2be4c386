"""The benchmark behind ``python -m benchmarks.bench``: the toolkit's loops against a plain PyTorch loop
(GAN) and ``transformers.Trainer`` (classifier), plus sampling throughput. One process, the
contenders interleaved and repeated; figures are medians with their spread."""
