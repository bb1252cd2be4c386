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

import argparse
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np
from PIL import Image

from gan_accel.config import MAX_SEED
from gan_accel.errors import UserError, cli_entry, parser_error


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
    rng = np.random.default_rng(seed)
    names = sorted(photos)
    written = 0
    for index, name in enumerate(names):
        count = total // len(names) + (1 if index < total % len(names) else 0)
        sub = folder / name
        sub.mkdir(parents=True, exist_ok=True)
        for number, crop in enumerate(random_crops(photos[name], count, crop_size, size, rng)):
            crop.save(sub / f"{number:05d}.png")
            written += 1
    return written


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output_dir", required=True, help="Folder to create (train/ and heldout/ inside).")
    parser.add_argument("--num_crops", type=int, default=8000, help="Training crops, split evenly between the photos.")
    parser.add_argument("--num_heldout", type=int, default=1000, help="Held-out crops for the metric (0: none).")
    parser.add_argument("--crop_size", type=int, default=128, help="Side of a crop in the photo's pixels.")
    parser.add_argument("--size", type=int, default=64, help="Side of the saved crops, pixels.")
    parser.add_argument(
        "--seed", type=int, default=0, help="Seed of the crop positions (the held-out split uses seed + 1)."
    )
    parser.error = parser_error
    args = parser.parse_args(argv)
    out = Path(args.output_dir)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--output_dir {out}: exists and is not empty; pass a new folder")
    for flag in ("num_crops", "crop_size", "size"):
        if getattr(args, flag) < 1:
            raise UserError(f"--{flag} must be >= 1; got {getattr(args, flag)}")
    if args.num_heldout < 0:
        raise UserError(f"--num_heldout must be >= 0 (0: none); got {args.num_heldout}")
    if not 0 <= args.seed < MAX_SEED:  # numpy's range, with seed + 1 for the held-out split
        raise UserError(f"--seed must be in [0, {MAX_SEED - 1}]; got {args.seed}")
    photos = bundled_photos()
    written = write_split(photos, out / "train", args.num_crops, args.crop_size, args.size, args.seed)
    held = (
        write_split(photos, out / "heldout", args.num_heldout, args.crop_size, args.size, args.seed + 1)
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
