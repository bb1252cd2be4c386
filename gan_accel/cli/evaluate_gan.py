"""Evaluate an exported generator: FID/KID, the SWD (no learned features), precision/recall,
density/coverage, class coverage, the real-data floor with its real-vs-real interval (a metric
inside or below it is marked saturated), and (--nearest) a memorisation check.

    gan-accel evaluate-gan --generator runs/digits/generator --dataset digits --num_images 1000 --nearest

Prints a summary and writes OUTPUT_DIR/eval_results.json (OUTPUT_DIR defaults to GENERATOR_eval
beside the generator folder, which a run's next export replaces) with every number's bootstrap interval and its metric protocol (compare two results with
gan-accel compare-metrics A.json B.json); --nearest adds OUTPUT_DIR/nearest.png. The domain
classifier and the real reference statistics are cached under --cache_dir.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional, Sequence

from gan_accel import interrupt
from gan_accel.config import check_choice, check_positive, choice, parse_config
from gan_accel.data import DATASETS, load_image_data
from gan_accel.data.fingerprint import FOLDER_DATASETS
from gan_accel.data.paths import check_can_write, check_folders
from gan_accel.device import check_device
from gan_accel.errors import ConfigError, UserError, cli_entry
from gan_accel.loop.atomic import atomic_file, write_text_atomic
from gan_accel.metrics import FEATURE_EXTRACTORS, GANEvaluator, format_result
from gan_accel.metrics.bootstrap import BOOTSTRAP_RESAMPLES
from gan_accel.metrics.fidelity import MIN_IMAGES, check_num_images


@dataclass
class EvalArguments:
    """Settings of one evaluation."""

    generator: str = field(metadata={"help": "Exported generator folder (OUTPUT_DIR/generator of a training run)."})
    dataset: str = choice("digits", DATASETS, "Real dataset the generator is compared with.")
    data_dir: Optional[str] = field(
        default=None, metadata={"help": "Where the dataset lives (folder, mnist, fashion_mnist, cifar10)."}
    )
    num_images: int = field(
        default=1000,
        metadata={"help": f"Generated images to evaluate (also caps the floor's sample size; at least {MIN_IMAGES})."},
    )
    feature_extractor: str = choice(
        "domain",
        FEATURE_EXTRACTORS,
        "Feature space of FID/KID: a classifier trained on the real data, or Inception-v3 (local weights).",
    )
    output_dir: Optional[str] = field(
        default=None,
        metadata={
            "help": "Folder for eval_results.json (default: GENERATOR_eval beside the generator folder; not inside it)."
        },
    )
    image_size: Optional[int] = field(
        default=None,
        metadata={"help": "Image side (default: the generator's, from its config.json; another value is refused)."},
    )
    channels: Optional[int] = field(
        default=None,
        metadata={
            "help": "Image channels, 1 or 3 (default: the generator's, from its config.json; another value is refused)."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed of the latent codes and of KID's subsets."})
    batch_size: int = field(default=250, metadata={"help": "Images per forward pass."})
    cache_dir: Optional[str] = field(
        default=None,
        metadata={
            "help": "Cache of classifiers and reference statistics (default $GAN_ACCEL_CACHE or ~/.cache/gan_accel)."
        },
    )
    inception_weights: Optional[str] = field(
        default=None, metadata={"help": "Inception-v3 FID weights file (weights-inception-2015-12-05-6726825d.pth)."}
    )
    min_classifier_accuracy: float = field(
        default=0.9, metadata={"help": "Held-out accuracy the domain classifier must reach to be used."}
    )
    device: str = field(
        default="cpu", metadata={"help": "Device for the generator and the features (cpu, cuda, cuda:1)."}
    )
    bootstrap: int = field(
        default=BOOTSTRAP_RESAMPLES,
        metadata={"help": "Bootstrap resamples behind each metric's 95 percent interval (0: no intervals)."},
    )
    nearest: bool = field(
        default=False,
        metadata={
            "help": "Memorisation check: the copy rate and OUTPUT_DIR/nearest.png, generated images beside their "
            "nearest training images (features and pixels)."
        },
    )
    nearest_rows: int = field(
        default=16,
        metadata={
            "help": "Rows of nearest.png: the generated images closest to a training image, most suspicious first."
        },
    )
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks instead of one-line errors."})

    def __post_init__(self) -> None:
        if not self.generator:
            raise ConfigError("--generator must be an exported generator folder")
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("feature_extractor", self.feature_extractor, FEATURE_EXTRACTORS)
        check_num_images("num_images", self.num_images)
        if self.image_size is not None:
            check_positive("image_size", self.image_size)
        check_positive("batch_size", self.batch_size)
        if self.channels not in (None, 1, 3):
            raise ConfigError(f"--channels must be 1 or 3; got {self.channels}")
        if not 0.0 <= self.min_classifier_accuracy <= 1.0:
            raise ConfigError(f"--min_classifier_accuracy must be in [0, 1]; got {self.min_classifier_accuracy}")
        check_positive("bootstrap", self.bootstrap, allow_zero=True)
        check_positive("nearest_rows", self.nearest_rows)
        if self.output_dir and Path(self.output_dir).exists() and not Path(self.output_dir).is_dir():
            raise ConfigError(
                f"--output_dir {self.output_dir}: is a file, not a folder; pass a folder for eval_results.json"
            )
        check_device(self.device)


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((EvalArguments,), argv, description=__doc__)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from gan_accel.models import (
        load_generator,  # imported here: evaluation does not need the training stack loaded early
    )

    # Not inside the generator folder: the run's next export replaces it, results and all.
    args = replace(args, output_dir=args.output_dir or str(default_output_dir(args.generator)))
    check_can_write("--output_dir", args.output_dir)  # a read-only folder: before any model is loaded
    # The generator first (seconds): its own config.json fixes the image size and channels, and
    # a conflicting flag must fail before the minutes of domain-classifier training.
    G = load_generator(args.generator)
    data_dir = args.data_dir if args.dataset in FOLDER_DATASETS else None
    check_folders(
        {"--generator": args.generator, "--data_dir": data_dir},
        {"--output_dir": args.output_dir, "--cache_dir": args.cache_dir},
    )
    for flag in ("image_size", "channels"):
        given = getattr(args, flag)
        own = getattr(G, flag)
        if given is not None and given != own:
            raise UserError(
                f"--{flag} {given}: the generator in {args.generator} makes {flag} {own}; "
                f"drop --{flag} (it is read from the generator's config.json)"
            )
    args = replace(args, image_size=G.image_size, channels=G.channels)  # recorded in eval_results.json
    real = load_image_data(args.dataset, args.data_dir, args.image_size, args.channels)
    G = G.to(args.device)
    evaluator = GANEvaluator(
        real,
        feature_extractor=args.feature_extractor,
        num_images=args.num_images,
        cache_dir=args.cache_dir,
        device=args.device,
        seed=args.seed,
        batch_size=args.batch_size,
        inception_weights=args.inception_weights,
        min_classifier_accuracy=args.min_classifier_accuracy,
        bootstrap_resamples=args.bootstrap,
    )
    result = evaluator.evaluate_full(G)
    print(format_result(result))
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {**asdict(result), "config": asdict(args)}
    if args.nearest:
        record["memorisation"] = write_nearest(evaluator, G, args.nearest_rows, out_dir)
    path = out_dir / "eval_results.json"
    with interrupt.deferred():  # a signal lands before or after the file, not inside it
        write_text_atomic(path, json.dumps(record, indent=2) + "\n", "results")
    print(f"wrote {path}")
    return 0


def default_output_dir(generator: str) -> Path:
    """``RUN/generator`` -> ``RUN/generator_eval``: beside the export, where no export replaces it."""
    folder = Path(generator)
    return folder.with_name(f"{folder.resolve().name}_eval")


def write_nearest(evaluator: GANEvaluator, G, rows: int, out_dir: Path) -> dict:
    """The memorisation check: prints the copy rates, writes OUTPUT_DIR/nearest.png, returns the report."""
    from torchvision.utils import save_image

    from gan_accel.metrics.memorisation import check_memorisation

    report, grid = check_memorisation(evaluator, G, rows=rows)
    grid_path = out_dir / "nearest.png"
    with atomic_file(grid_path, "image grid") as tmp:
        save_image(grid, tmp)
    report["grid"] = str(grid_path)
    verdict = "no sign of copying"
    if report["copying"]:
        verdict = "COPYING: many samples are nearer the training set than real held-out images"
    print(
        f"copy rate: {report['copy_rate_features']:.1%} in features, {report['copy_rate_pixels']:.1%} in pixels "
        f"(about {report['percentile']:g}% for fresh images of the data): {verdict}; nearest images in {grid_path}"
    )
    return report


if __name__ == "__main__":
    raise SystemExit(main())
