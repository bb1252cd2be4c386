"""Build a folder of real-photo crops for development and benchmarks, offline.

The photos are the three bundled with the installed libraries: scikit-learn's china.jpg and
flower.jpg (``sklearn.datasets.load_sample_images``) and matplotlib's grace_hopper.jpg. Each gets
its own sub-folder (a class: the domain features tell the photos apart, and coverage counts them)
with random square crops, resized to ``--size``:

    OUT/train/<photo>/00000.png ...     --num_crops images in all, split evenly between the photos
    OUT/heldout/<photo>/00000.png ...   --num_heldout images, other random crops (another seed)

    gan-accel make-photo-crops --output_dir photos --num_crops 8000 --num_heldout 1000
    gan-accel train-gan --dataset folder --data_dir photos/train --output_dir runs/photos --time_budget 15m
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
from PIL import Image

from gan_accel import interrupt
from gan_accel.config import MAX_SEED, check_positive, parse_config
from gan_accel.data.paths import check_folders
from gan_accel.errors import ConfigError, cli_entry


@dataclass
class PhotoCropArguments:
    output_dir: str = field(metadata={"help": "Folder to create (train/ and heldout/ inside)."})
    num_crops: int = field(default=8000, metadata={"help": "Training crops, split evenly between the photos."})
    num_heldout: int = field(default=1000, metadata={"help": "Held-out crops for the metric (0: none)."})
    crop_size: int = field(default=128, metadata={"help": "Side of a crop in the photo's pixels."})
    size: int = field(default=64, metadata={"help": "Side of the saved crops, pixels."})
    seed: int = field(default=0, metadata={"help": "Seed of the crop positions (the held-out split uses seed + 1)."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        for flag in ("num_crops", "crop_size", "size"):
            check_positive(flag, getattr(self, flag))
        check_positive("num_heldout", self.num_heldout, allow_zero=True)
        if not 0 <= self.seed < MAX_SEED:  # numpy's range, with seed + 1 for the held-out split
            raise ConfigError(f"--seed must be in [0, {MAX_SEED - 1}]; got {self.seed}")
        out = Path(self.output_dir)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ConfigError(f"--output_dir {out}: exists and is not an empty folder; pass a new folder")


def bundled_photos() -> Dict[str, Image.Image]:
    """The three photos, by name, as RGB images."""
    import matplotlib
    from sklearn.datasets import load_sample_images

    photos = {}
    bunch = load_sample_images()
    for path, array in zip(bunch.filenames, bunch.images):
        photos[Path(path).stem] = Image.fromarray(array).convert("RGB")
    grace = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    with Image.open(grace) as image:
        photos["grace_hopper"] = image.convert("RGB")
    return photos


def crop_boxes(photo: Image.Image, count: int, crop_size: int, rng: np.random.Generator):
    """``count`` square boxes ``(left, top, right, bottom)`` of ``crop_size`` source pixels at random positions."""
    width, height = photo.size
    side = min(crop_size, width, height)
    for _ in range(count):
        left = int(rng.integers(0, width - side + 1))
        top = int(rng.integers(0, height - side + 1))
        yield left, top, left + side, top + side


def random_crops(photo: Image.Image, count: int, crop_size: int, size: int, rng: np.random.Generator):
    """``count`` square crops of ``crop_size`` source pixels at random positions, resized to ``size``."""
    for box in crop_boxes(photo, count, crop_size, rng):
        yield photo.crop(box).resize((size, size), Image.BICUBIC)


def write_split(photos: Dict[str, Image.Image], folder: Path, total: int, crop_size: int, size: int, seed: int) -> int:
    from gan_accel.loop.atomic import atomic_file  # on use: the package pulls in accelerate

    rng = np.random.default_rng(seed)
    names = sorted(photos)
    written = 0
    for index, name in enumerate(names):
        count = total // len(names) + (1 if index < total % len(names) else 0)
        sub = folder / name
        sub.mkdir(parents=True, exist_ok=True)
        for number, crop in enumerate(random_crops(photos[name], count, crop_size, size, rng)):
            with interrupt.deferred():  # a signal lands between two files, not inside one
                with atomic_file(sub / f"{number:05d}.png", "crop") as tmp:
                    crop.save(tmp)
                interrupt.phase("write")
            written += 1
    return written


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((PhotoCropArguments,), argv, description=__doc__)
    out = Path(args.output_dir)
    check_folders({}, {"--output_dir": out})
    photos = bundled_photos()
    limit = min(min(photo.size) for photo in photos.values())
    if args.crop_size > limit:
        # A larger crop would be cut to the photo (crop_boxes clamps): refuse rather than report a size never made.
        raise ConfigError(
            f"--crop_size {args.crop_size}: larger than the smallest bundled photo's side ({limit} px); "
            f"pass at most {limit}"
        )
    from gan_accel.loop.atomic import staged_files

    # Staged beside --output_dir and moved in when complete: a failed write leaves it as it was
    # (new or empty), so the same command runs again instead of refusing a half-filled folder.
    with staged_files(out, "photo crops") as stage:
        written = write_split(photos, stage / "train", args.num_crops, args.crop_size, args.size, args.seed)
        held = (
            write_split(photos, stage / "heldout", args.num_heldout, args.crop_size, args.size, args.seed + 1)
            if args.num_heldout > 0
            else 0
        )
    print(
        f"{written} training crops in {out / 'train'}, {held} held-out crops in {out / 'heldout'} "
        f"({', '.join(sorted(photos))}; {args.crop_size} px crops at {args.size} px)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
