"""Time opening a decode-cache entry (its integrity check) against reading the whole array:

    python -m benchmarks.speed cache_open --num_images 5000 --image_size 64

Builds an entry of random pixels in a temporary folder (no decoding), then times ``open_cache``
(median of --reps, the file in the page cache) and ``read_all``, and prints both and their ratio.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import check_positive, parse_config
from gan_accel.errors import cli_entry


@dataclass
class BenchCacheArguments:
    num_images: int = field(default=5000, metadata={"help": "Images in the entry."})
    image_size: int = field(default=64, metadata={"help": "Side of the (RGB) images."})
    reps: int = field(default=7, metadata={"help": "Timed opens (the median is printed)."})

    def __post_init__(self) -> None:
        check_positive("num_images", self.num_images)
        check_positive("image_size", self.image_size)
        check_positive("reps", self.reps)


class RandomImages:
    """Decoded items as ``decode_all`` yields them, without any decoding."""

    def __init__(self, num_images: int, image_size: int) -> None:
        self.num_images, self.image_size = num_images, image_size

    def __len__(self) -> int:
        return self.num_images

    def describe(self, i: int) -> str:
        return f"image {i}"

    def __getitem__(self, i: int):
        import torch

        generator = torch.Generator().manual_seed(i)
        shape = (3, self.image_size, self.image_size)
        return torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8), False, ""


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((BenchCacheArguments,), argv, description=__doc__)
    from gan_accel.data.cache import build_cache, open_cache

    shape = (3, args.image_size, args.image_size)
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "entry"
        build_cache(entry, "bench", RandomImages(args.num_images, args.image_size), None, [], shape, 0, "bench")
        opens = []
        for _ in range(args.reps):
            start = time.perf_counter()
            cache, why = open_cache(entry, "bench")
            opens.append(time.perf_counter() - start)
        start = time.perf_counter()
        cache.read_all()
        read_all = time.perf_counter() - start
    megabytes = args.num_images * 3 * args.image_size**2 / 1e6
    open_s = statistics.median(opens)
    print(
        f"{args.num_images} images of {args.image_size} px ({megabytes:.0f} MB): open {open_s * 1000:.1f} ms, "
        f"read_all {read_all * 1000:.1f} ms, open/read_all {open_s / read_all:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
