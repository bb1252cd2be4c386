"""The folders of real images the panel judges on (docs/photos.md, "The panel"), and the command
that writes one as make-photo-crops lays out its folder (train/ and heldout/, another seed):

    python -m benchmarks.photos folder --name mahotas --output_dir mahotas --num_crops 8000 --num_heldout 1000
    gan-accel train-gan --dataset folder --data_dir mahotas/train --output_dir runs/mahotas --time_budget 15m

The panel decides the preset on two folders, so that a choice that only suits one set of photos
does not pass. Offline, few real photographs ship with installable packages; scikit-image's
sample photos are not used (an outside judge keeps them held out).
  photos   the three photos make-photo-crops cuts (scikit-learn's china and flower, matplotlib's
           grace_hopper): 128 source px, RGB
  mahotas  the photographs the mahotas wheel ships (mahotas/demos/data, ``pip install mahotas``):
           DepartmentStore (an indoor scene, 1024 x 768), luispedro (a portrait, 300 x 377) and
           nuclear (fluorescence microscopy, 1344 x 1024, grey, kept as RGB so the folder is one
           kind): 128 source px. lena.jpg, in the same folder, is left out.
  scans    matplotlib's two grey measurements (benchmarks/photos/scans.py): 96 source px, grey
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple, Union

FOLDERS = ("photos", "mahotas", "scans")
SECOND_FOLDERS = FOLDERS[1:]  # what the folder command writes (the photos: gan-accel make-photo-crops)
MAHOTAS_PHOTOS = ("DepartmentStore.jpg", "luispedro.jpg", "nuclear.png")
# The region judge's grid over each image (benchmarks/photos/equal_time.py): a 3x3 grid, except
# where the regions of an image look alike. Nuclei on black look the same in every cell of the
# micrograph: a judge asked to tell those cells apart guesses (held-out accuracy 0.66 over the three
# photos at 100 crops per class, under the panel's 0.8), so the micrograph is one class (0.88, 19
# classes; the bundled photos: 0.93 at the same size).
GRIDS: Dict[str, Union[int, Dict[str, int]]] = {
    "photos": 3,
    "mahotas": {"DepartmentStore": 3, "luispedro": 3, "nuclear": 1},
    "scans": 3,
}


def mahotas_images() -> Dict[str, object]:
    """The three mahotas photographs, by name (the file's stem), as RGB PIL images."""
    import mahotas.demos
    from PIL import Image

    folder = Path(mahotas.demos.__file__).parent / "data"
    images = {}
    for name in MAHOTAS_PHOTOS:
        with Image.open(folder / name) as image:
            images[Path(name).stem] = image.convert("RGB")
    return images


def missing(folder: str) -> Optional[str]:
    """Why ``folder``'s images cannot be read here (a package absent), or None: checked before a
    benchmark starts, so it fails on its first line rather than after its runs."""
    if folder == "mahotas":
        try:
            import mahotas.demos  # noqa: F401
        except ImportError:
            return "the mahotas folder needs the mahotas package: pip install mahotas"
    return None


def sources(folder: str) -> Tuple[Dict[str, object], int, int]:
    """``(images by name, crop side in source px, channels)`` of a folder kind."""
    if folder == "photos":
        from gan_accel.cli.make_photo_crops import bundled_photos

        return bundled_photos(), 128, 3
    if folder == "mahotas":
        return mahotas_images(), 128, 3
    if folder == "scans":
        from benchmarks.photos.scans import CROP_SIZE, scan_images

        return scan_images(), CROP_SIZE, 1
    raise ValueError(f"unknown folder {folder!r}; use one of {', '.join(FOLDERS)}")


def make_crops(folder: str, output_dir: Path, num_crops: int = 8000, num_heldout: int = 1000, seed: int = 0) -> Path:
    """OUTPUT_DIR/train and OUTPUT_DIR/heldout (seed + 1) of ``folder``'s images, built once; returns OUTPUT_DIR."""
    from gan_accel.cli.make_photo_crops import write_split

    out = Path(output_dir)
    if not (out / "train").is_dir():
        images, crop_size, _ = sources(folder)
        partial = out.with_name(out.name + ".partial")
        write_split(images, partial / "train", num_crops, crop_size, 64, seed)
        if num_heldout:
            write_split(images, partial / "heldout", num_heldout, crop_size, 64, seed + 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        partial.rename(out)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", choices=SECOND_FOLDERS, default="mahotas", help="Which folder to write.")
    parser.add_argument("--output_dir", required=True, help="Folder to create (train/ and heldout/ inside).")
    parser.add_argument("--num_crops", type=int, default=8000, help="Training crops, split evenly between the images.")
    parser.add_argument("--num_heldout", type=int, default=1000, help="Held-out crops (another seed).")
    args = parser.parse_args(argv)
    if Path(args.output_dir).exists():
        parser.error(f"--output_dir {args.output_dir}: exists; pass a new folder")
    if args.num_crops < 2 or args.num_heldout < 0:
        parser.error("--num_crops must be 2 or more and --num_heldout 0 or more")
    if missing(args.name):
        parser.error(f"--name {args.name}: {missing(args.name)}")
    out = make_crops(args.name, Path(args.output_dir), args.num_crops, args.num_heldout)
    print(
        f"{args.num_crops} training crops in {out / 'train'}, {args.num_heldout} held-out crops in {out / 'heldout'}"
    )
    return 0
