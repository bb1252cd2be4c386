"""Translate a folder of images with a generator exported by gan-accel train-cyclegan:

    gan-accel translate --generator RUN/generator_A2B --input_dir photos --output_dir paintings

Every image under --input_dir is resized (shorter side) and centre-cropped to the generator's
training size, translated, and written under --output_dir with the same relative file name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import check_positive, parse_config
from gan_accel.data.paths import check_can_write, check_folders
from gan_accel.device import check_device
from gan_accel.errors import ConfigError, cli_entry


@dataclass
class TranslateArguments:
    generator: str = field(
        metadata={"help": "Exported generator folder (OUTPUT_DIR/generator_A2B or generator_B2A of a training run)."}
    )
    input_dir: str = field(metadata={"help": "Folder of images to translate (sub-folders included)."})
    output_dir: str = field(metadata={"help": "Where the translations go, under the same relative file names."})
    image_size: int = field(
        default=0,
        metadata={
            "help": "Side images are translated at (0: the generator's training size; any multiple of 4 works, the generator is convolutional)."
        },
    )
    batch_size: int = field(default=16, metadata={"help": "Images per forward pass."})
    device: str = field(default="cpu", metadata={"help": "Device for the generator (cpu, cuda, cuda:1)."})
    overwrite: bool = field(
        default=False,
        metadata={
            "help": "Replace files that already exist in --output_dir (otherwise refused before anything is written)."
        },
    )
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        check_positive("image_size", self.image_size, allow_zero=True)
        check_positive("batch_size", self.batch_size)
        if self.image_size % 4:
            raise ConfigError(f"--image_size must be a multiple of 4; got {self.image_size}")
        check_device(self.device)


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((TranslateArguments,), argv, description=__doc__)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from gan_accel.cyclegan.export import load_translator
    from gan_accel.cyclegan.translate import translate_folder

    check_can_write("--output_dir", args.output_dir)  # a read-only folder: before any model is loaded
    G, config = load_translator(args.generator)  # first: it says when --generator is a run folder, not an export
    check_folders({"--generator": args.generator}, {"--output_dir": args.output_dir})
    size = args.image_size or int(config["image_size"])
    written, skipped = translate_folder(
        G,
        Path(args.input_dir),
        Path(args.output_dir),
        size,
        int(config["channels"]),
        args.batch_size,
        args.device,
        args.overwrite,
    )
    print(
        f"Translated {written} images ({config['direction']}) into {args.output_dir}"
        + (f"; skipped {skipped} unreadable files" if skipped else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
