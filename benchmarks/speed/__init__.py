"""Speed: what the toolkit's loops cost against plain PyTorch, a hand-written Accelerate loop and
transformers.Trainer, and what the speed levers buy (docs/benchmarks.md):

    python -m benchmarks.speed loops --only gan,sampling --output_json bench.json
    python -m benchmarks.speed arch | progressive | knobs | cache_open

The GAN result of ``loops`` carries the roofline (FLOPs per update against the CPU's peak,
benchmarks/speed/roofline.py). Quality is not measured here: see benchmarks.photos.
"""

from typing import Optional, Sequence

from benchmarks.entry import dispatch

COMMANDS = {
    "loops": ("benchmarks.speed.loops", "the loops against plain PyTorch / Accelerate / Trainer, sampling, roofline"),
    "arch": ("benchmarks.speed.arch", "FLOPs and seconds per update of each GAN architecture"),
    "progressive": ("benchmarks.speed.progressive", "a half-size update (progressive stage 1) against full size"),
    "knobs": ("benchmarks.speed.knobs", "the efficient-training flags on the classifier path"),
    "cache_open": ("benchmarks.speed.cache_open", "the decode cache's integrity check at open"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    return dispatch("speed", __doc__, COMMANDS, argv)
