"""Write images from an exported generator, each from its own seed (listed in seeds.json, so any
one can be regenerated with --seeds), with the truncation trick, latent interpolation (a grid and
an animated GIF) and a per-class grid:
gan-accel sample-gan --generator RUN/generator --num_images N --output_dir DIR."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from gan_accel.config import MAX_SEED, check_choice, check_positive, check_seed, choice, parse_config
from gan_accel.data.paths import check_can_write, check_folders
from gan_accel.errors import ConfigError, UserError, cli_entry
from gan_accel.sampling import TRUNCATION_MODES

SEEDS_FILE = "seeds.json"
# Images one command may write: twice the 50,000 of the usual FID sample. Without a bound a typo
# such as --seeds 0-100000000 spent minutes building latents before a single file appeared.
MAX_IMAGES = 100_000
MAX_GIF_MS = 655_350  # a GIF frame's delay is 16 bits of hundredths of a second


@dataclass
class SampleArguments:
    generator: str = field(metadata={"help": "Exported generator folder (OUTPUT_DIR/generator of a training run)."})
    output_dir: str = field(metadata={"help": "Folder for the PNG files (000000.png, ...) and seeds.json."})
    num_images: Optional[int] = field(
        default=None,
        metadata={
            "help": f"Number of images to write (seeds --seed, --seed + 1, ...; at most {MAX_IMAGES:,}); not needed with --seeds."
        },
    )
    seed: int = field(
        default=0,
        metadata={
            "help": f"First seed: image i is drawn from seed --seed + i, so the same seed gives the same images (seeds are 0..{MAX_SEED})."
        },
    )
    seeds: Optional[str] = field(
        default=None,
        metadata={
            "help": f"Exact seeds, e.g. '3,17,40-44' (as listed in seeds.json): regenerates those images (seeds are 0..{MAX_SEED}, at most {MAX_IMAGES:,} of them)."
        },
    )
    batch_size: int = field(default=256, metadata={"help": "Images generated per forward pass."})
    grid: Optional[str] = field(default=None, metadata={"help": "Also write a grid of the images to this PNG file."})
    class_label: Optional[int] = field(
        default=None,
        metadata={
            "help": "Conditional generators: generate only this class (default: the class is seed %% num_classes)."
        },
    )
    class_grid: bool = field(
        default=False,
        metadata={
            "help": "Conditional generators: also write OUTPUT_DIR/class_grid.png, a row per class, a column per seed (the same z across a column)."
        },
    )
    truncation: float = field(
        default=1.0,
        metadata={
            "help": "Truncation psi: interpolate mode scales z toward the mean latent (0: the mean image, 1: off); resample mode redraws entries with |z| > psi."
        },
    )
    truncation_mode: str = choice("interpolate", TRUNCATION_MODES, "How --truncation is applied.")
    interpolate: int = field(
        default=0,
        metadata={
            "help": "Steps per path (>= 2): write OUTPUT_DIR/interpolation.png (a row per seed, slerp to the next seed) and interpolation.gif instead of single PNGs."
        },
    )
    gif_ms: int = field(default=80, metadata={"help": "Milliseconds per frame of interpolation.gif."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        check_choice("truncation_mode", self.truncation_mode, TRUNCATION_MODES)
        check_positive("truncation", self.truncation, allow_zero=self.truncation_mode == "interpolate")
        if self.seeds is not None:
            self.seed_list = parse_seeds(self.seeds)
            if self.num_images is not None and self.num_images != len(self.seed_list):
                raise ConfigError(
                    f"--num_images {self.num_images} but --seeds lists {len(self.seed_list)} seeds; "
                    "pass one of the two"
                )
        else:
            if self.num_images is None:
                raise ConfigError("--num_images or --seeds is required")
            check_positive("num_images", self.num_images)
            if self.num_images > MAX_IMAGES:
                raise ConfigError(f"--num_images must be at most {MAX_IMAGES:,}; got {self.num_images}")
            check_seed("seed", self.seed)
            if self.seed + self.num_images - 1 > MAX_SEED:
                raise ConfigError(
                    f"--seed {self.seed} with --num_images {self.num_images} goes past the last seed {MAX_SEED}; "
                    "lower --seed"
                )
            self.seed_list = list(range(self.seed, self.seed + self.num_images))
        check_positive("batch_size", self.batch_size)
        check_positive("gif_ms", self.gif_ms)
        if self.interpolate and self.interpolate < 2:
            raise ConfigError(f"--interpolate must be >= 2 steps per path (or 0: off); got {self.interpolate}")
        if self.interpolate * len(self.seed_list) > MAX_IMAGES:
            raise ConfigError(
                f"--interpolate {self.interpolate} steps x {len(self.seed_list)} seeds is more than {MAX_IMAGES:,} "
                "images; use fewer steps or seeds"
            )
        if self.gif_ms > MAX_GIF_MS:
            raise ConfigError(
                f"--gif_ms must be at most {MAX_GIF_MS} (the GIF format's longest frame); got {self.gif_ms}"
            )
        if self.class_label is not None and self.class_label < 0:
            raise ConfigError(f"--class_label must be >= 0; got {self.class_label}")
        if self.grid is not None:
            check_image_path("grid", self.grid)
        if Path(self.output_dir).exists() and not Path(self.output_dir).is_dir():
            raise ConfigError(
                f"--output_dir {self.output_dir}: is a file, not a folder; pass a folder for the PNG files"
            )


def parse_seeds(text: str) -> list:
    """``'3,17,40-44'`` -> ``[3, 17, 40, 41, 42, 43, 44]`` (order kept, ranges inclusive), each
    seed in [0, MAX_SEED] and at most MAX_IMAGES of them (counted before a range is expanded)."""
    seeds = []
    for part in (p.strip() for p in text.split(",")):
        try:
            low, high = part.split("-", 1) if "-" in part[1:] and not part.startswith("-") else (part, part)
            low, high = int(low), int(high)
        except ValueError:
            raise ConfigError(f"--seeds {text!r}: {part!r} is not a seed or a range such as 40-44") from None
        if not 0 <= low <= high <= MAX_SEED:
            raise ConfigError(
                f"--seeds {text!r}: {part!r}: seeds are 0..{MAX_SEED}, a range low-high with low <= high"
            )
        if len(seeds) + high - low + 1 > MAX_IMAGES:
            raise ConfigError(
                f"--seeds {text!r}: more than {MAX_IMAGES:,} seeds; split the command into smaller lists"
            )
        seeds += range(low, high + 1)
    return seeds


def check_image_path(flag: str, path: str) -> None:
    """An image file PIL can write, checked before anything is generated or written."""
    from PIL import Image

    Image.init()  # registers every format, so the extension table is complete
    if Path(path).is_dir():
        raise ConfigError(f"--{flag} {path}: is a folder; pass an image file name such as grid.png")
    suffix = Path(path).suffix.lower()
    if Image.registered_extensions().get(suffix) not in Image.SAVE:
        raise ConfigError(f"--{flag} {path}: unknown image type {suffix or '(no extension)'!r}; use .png or .jpg")


def check_conditional_flags(args: SampleArguments, num_classes: int) -> None:
    """Class flags against the generator, before anything is generated or written."""
    for flag, given in (("class_label", args.class_label is not None), ("class_grid", args.class_grid)):
        if given and not num_classes:
            raise UserError(f"--{flag}: the generator in {args.generator} is not class-conditional; drop --{flag}")
    if args.class_label is not None and args.class_label >= num_classes:
        raise UserError(f"--class_label {args.class_label}: the generator has classes 0..{num_classes - 1}")


def training_data(generator: str) -> Optional[str]:
    """The image folder the run that exported ``generator`` trained on (samples written there would
    be read back as real images by its next run), or None."""
    from gan_accel.data.paths import RUN_MARKER, is_run_folder

    run = Path(generator).resolve().parent
    if not is_run_folder(run):
        return None
    try:
        config = json.loads((run / RUN_MARKER).read_text())
    except (OSError, ValueError):
        return None
    data_dir = config.get("data_dir") if isinstance(config, dict) else None
    # As given to train-gan: absolute, or relative to where it ran (here, most often).
    return str(data_dir) if data_dir and config.get("dataset") == "folder" else None


def written_before(out: Path) -> set:
    """The names an earlier sample-gan wrote in ``out``, from its seeds.json (empty when there is
    none, or when seeds.json is not one of ours)."""
    try:
        listing = json.loads((out / SEEDS_FILE).read_text())
        owned = {SEEDS_FILE, *listing.get("files", [])} | {image["file"] for image in listing["images"]}
        owned |= {listing["grid"]} if listing.get("grid") else set()  # a --grid, by its resolved path
        return owned if "sample-gan" in listing.get("regenerate", "") else set()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def grid_written(args: SampleArguments) -> Optional[str]:
    """The resolved path of the --grid this command writes (none with --interpolate), as seeds.json records it."""
    return str(Path(args.grid).resolve()) if args.grid and not args.interpolate else None


def check_replaceable(args: SampleArguments, out: Path, names: list) -> None:
    """A file this command would write in --output_dir must be absent or one an earlier sample-gan
    wrote there (listed in its seeds.json): the user's own 000000.png is never replaced."""
    planned = ["interpolation.png", "interpolation.gif"] if args.interpolate else list(names)
    planned += ["class_grid.png"] * args.class_grid + [SEEDS_FILE]
    owned = written_before(out)
    grid = grid_written(args)
    if grid and Path(grid).exists() and grid not in owned:
        raise UserError(
            f"--grid {args.grid}: not a grid sample-gan wrote (the seeds.json in --output_dir {out} does not "
            "record it); it would be replaced: choose a new --grid name"
        )
    for name in planned:
        if (out / name).exists() and name not in owned:
            raise UserError(
                f"--output_dir {out}: {out / name} is not a file sample-gan wrote (no seeds.json of sample-gan "
                "there lists it); it would be replaced: choose an empty or new --output_dir"
            )


def regenerate_command(args: SampleArguments) -> str:
    """The command line that writes one listed image again (``{seed}`` to fill in)."""
    parts = [f"gan-accel sample-gan --generator {args.generator} --seeds {{seed}} --output_dir OUT"]
    if args.truncation != 1.0:
        parts.append(f"--truncation {args.truncation} --truncation_mode {args.truncation_mode}")
    if args.class_label is not None:
        parts.append(f"--class_label {args.class_label}")
    return " ".join(parts)


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((SampleArguments,), argv, description=__doc__)
    import torch

    from gan_accel.loop.atomic import write_text_atomic
    from gan_accel.models import load_generator
    from gan_accel.sampling import (
        class_rows,
        generate_from_latents,
        interpolation_paths,
        save_gif,
        save_grid,
        save_individual,
        seed_label,
        seed_latent,
    )

    for flag, target in (("--output_dir", args.output_dir), ("--grid", args.grid)):
        if target:  # a read-only folder is found before any model is loaded
            check_can_write(flag, target)
    G = load_generator(args.generator)  # first: it says when --generator is a run folder, not an export
    check_folders(
        {"--generator": args.generator, "--data_dir of its run": training_data(args.generator)},
        {"--output_dir": args.output_dir, "--grid": args.grid},
    )
    num_classes = G.num_classes
    check_conditional_flags(args, num_classes)
    seeds = args.seed_list
    z = torch.stack([seed_latent(s, G.z_dim, args.truncation, args.truncation_mode) for s in seeds])
    labels = None
    if num_classes:
        fixed = args.class_label
        labels = torch.tensor([fixed if fixed is not None else seed_label(s, num_classes) for s in seeds])
    out = Path(args.output_dir)
    names = [f"{i:06d}.png" for i in range(len(seeds))]
    check_replaceable(args, out, names)
    if args.interpolate:
        names = ["interpolation.png"] * len(seeds)
    # The record of what this command writes comes before the first file (after the first
    # generation, the work): a write that fails half-way leaves files it lists, so the same command
    # run again may replace them (and nothing else).
    listing = {
        "generator": str(args.generator),
        "truncation": args.truncation,
        "truncation_mode": args.truncation_mode,
        "images": [
            {"file": name, "seed": s, **({"class_label": int(y)} if labels is not None else {})}
            for name, s, y in zip(names, seeds, labels if labels is not None else seeds)
        ],
        "regenerate": regenerate_command(args),
        "files": sorted(
            {*names, *(["interpolation.gif"] if args.interpolate else [])}
            | ({"class_grid.png"} if args.class_grid else set())
        ),
        **({"grid": grid_written(args)} if grid_written(args) else {}),
    }

    def write_record() -> None:
        out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / SEEDS_FILE, json.dumps(listing, indent=2) + "\n", "seed list")

    if args.interpolate:
        paths = interpolation_paths(z, args.interpolate)  # [n, steps, z_dim]
        path_labels = labels.repeat_interleave(args.interpolate) if labels is not None else None
        frames = generate_from_latents(G, paths.flatten(0, 1), path_labels, args.batch_size)
        write_record()
        frames = frames.view(len(seeds), args.interpolate, *frames.shape[1:])
        save_grid(frames.flatten(0, 1), out / "interpolation.png", nrow=args.interpolate)
        ncol = max(1, round(len(seeds) ** 0.5))
        # A frame per step, every path at once; played forward then back so the loop has no jump.
        order = [*range(args.interpolate), *range(args.interpolate - 2, 0, -1)]
        tiles = [make_tile_grid(frames[:, t], ncol) for t in order]
        save_gif(tiles, out / "interpolation.gif", duration_ms=args.gif_ms)
        print(
            f"Wrote {out / 'interpolation.png'} ({len(seeds)} paths x {args.interpolate} steps) and "
            f"{out / 'interpolation.gif'}"
        )
    else:
        images = generate_from_latents(G, z, labels, args.batch_size)
        write_record()
        n = save_individual(images, out)
        print(f"Wrote {n} images to {args.output_dir}")
        if args.grid:
            save_grid(images[:256], Path(args.grid), nrow=max(1, min(16, int(len(images[:256]) ** 0.5))))
            print(f"Wrote grid {args.grid}")
    if args.class_grid:
        columns = z[:16]
        grid_z = columns.repeat(num_classes, 1)
        grid_y = torch.arange(num_classes).repeat_interleave(len(columns))
        images = generate_from_latents(G, grid_z, grid_y, args.batch_size)
        grid_images, nrow = class_rows(images, grid_y, num_classes)
        save_grid(grid_images, out / "class_grid.png", nrow=nrow)
        print(f"Wrote {out / 'class_grid.png'} ({num_classes} classes x {len(columns)} seeds)")
    print(f"Seeds: {out / SEEDS_FILE}")
    return 0


def make_tile_grid(images, ncol: int):
    from torchvision.utils import make_grid

    return make_grid(images, nrow=ncol, padding=2, pad_value=-1.0)


if __name__ == "__main__":
    raise SystemExit(main())
