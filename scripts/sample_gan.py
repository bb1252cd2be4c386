"""Write N images (individual PNGs, the input of FID tools) and an optional grid from an
exported generator: python scripts/sample_gan.py --generator RUN/generator --num_images N --output_dir DIR."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a checkout without install

from gan_accel.config import check_positive, parse_config  # noqa: E402
from gan_accel.errors import ConfigError, UserError, cli_entry  # noqa: E402


@dataclass
class SampleArguments:
    generator: str = field(metadata={"help": "Exported generator folder (OUTPUT_DIR/generator of a training run)."})
    num_images: int = field(metadata={"help": "Number of images to write."})
    output_dir: str = field(metadata={"help": "Folder for the PNG files (000000.png, ...)."})
    seed: int = field(default=0, metadata={"help": "Noise seed: the same seed gives the same images."})
    batch_size: int = field(default=256, metadata={"help": "Images generated per forward pass."})
    grid: Optional[str] = field(default=None, metadata={"help": "Also write a grid of the images to this PNG file."})
    class_label: Optional[int] = field(default=None, metadata={"help": "Conditional generators: generate only this class."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        check_positive("num_images", self.num_images)
        check_positive("batch_size", self.batch_size)
        if self.class_label is not None and self.class_label < 0:
            raise ConfigError(f"--class_label must be >= 0; got {self.class_label}")
        if self.grid is not None:
            check_image_path("grid", self.grid)
        if Path(self.output_dir).exists() and not Path(self.output_dir).is_dir():
            raise ConfigError(f"--output_dir {self.output_dir}: is a file, not a folder; pass a folder for the PNG files")


def check_image_path(flag: str, path: str) -> None:
    """An image file PIL can write, checked before anything is generated or written."""
    from PIL import Image

    Image.init()  # registers every format, so the extension table is complete
    if Path(path).is_dir():
        raise ConfigError(f"--{flag} {path}: is a folder; pass an image file name such as grid.png")
    suffix = Path(path).suffix.lower()
    if Image.registered_extensions().get(suffix) not in Image.SAVE:
        raise ConfigError(f"--{flag} {path}: unknown image type {suffix or '(no extension)'!r}; use .png or .jpg")


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((SampleArguments,), argv, description=__doc__)
    import torch

    from gan_accel.models import load_generator
    from gan_accel.sampling import generate_images, save_grid, save_individual

    G = load_generator(args.generator)
    labels = None
    if args.class_label is not None:
        if not G.num_classes:
            raise UserError(f"--class_label: the generator in {args.generator} is not class-conditional")
        if args.class_label >= G.num_classes:
            raise UserError(f"--class_label {args.class_label}: the generator has classes 0..{G.num_classes - 1}")
        labels = torch.full((args.num_images,), args.class_label, dtype=torch.long)
    images = generate_images(G, args.num_images, batch_size=args.batch_size, seed=args.seed, labels=labels)
    n = save_individual(images, Path(args.output_dir))
    print(f"Wrote {n} images to {args.output_dir}")
    if args.grid:
        save_grid(images[:256], Path(args.grid), nrow=max(1, min(16, int(len(images[:256]) ** 0.5))))
        print(f"Wrote grid {args.grid}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
