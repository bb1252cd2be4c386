"""A panel of yardsticks the runs never select with (issue 56; docs/photos.md, "The panel").

A run picks ``best_generator/`` with its own domain features (and soon a sliced Wasserstein
distance); a choice of settings judged by the same kind of features can be tuned against them.
The panel judges with three figures of different kinds, none of which a run sees:

  region_judge    the photo benchmark's 27-region CNN (benchmarks/photos/equal_time.py): FID in the features
                  of a classifier of 3x3 regions of each source image, trained with labels
  colour_texture  no learned features: colour, edge and texture statistics (benchmarks/photos/panel_stats.py)
  ssl_encoder     a self-supervised encoder trained without labels on crops of its own
                  (benchmarks/photos/panel_encoder.py)

Each reports the distance of ``num_images`` generated images to as many real crops (the
reference), its real-vs-real floor (as many other real crops against the same reference) and
"x floor" (their ratio: 1 is as good as real images). A generator's figure is the mean over
PANEL_DRAWS draws of its noise, each draw's x floor kept beside it (a single scored set of images
also gets a 95% bootstrap interval). Lower is better on all three. The real crops of the
reference and floor, the judge's and the encoder's are cut from the same source images with other
seeds than the runs' training crops, so no yardstick is trained on an image it then measures.

Everything is seeded and cached in WORKDIR/<folder>/ (crops) and WORKDIR/cache/ (the judge, the
encoder): two calls on the same generator give the same figures.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

import torch
import torch.nn as nn

from benchmarks.photos.folders import GRIDS, sources
from benchmarks.photos.panel_encoder import EncoderSettings, SelfSupervised, drop_held_out
from benchmarks.photos.panel_stats import ColourTexture
from gan_accel.data.images import _resize_batch, load_image_data, to_float_images

YARDSTICKS = ("region_judge", "colour_texture", "ssl_encoder")
LABELS = {"region_judge": "region judge FID", "colour_texture": "colour+texture FD", "ssl_encoder": "SSL encoder FD"}
IMAGE_SIZE = 32  # the size every yardstick sees (the preset's CPU size; others are resized to it)
SEEDS = {"train": 0, "heldout": 1, "judge": 2, "real": 3, "encoder": 4}  # crop positions of each set
# Bumped when a yardstick changes how it measures: a record of another version is scored again from
# its run's folder. Version 2: colour+texture through the reference's ranks (panel_stats.py) and
# 4,000 images per set, after three draws of one generator's noise scored 1.2-3.1x apart on
# colour+texture and 1.1-1.4x on the encoder at version 1's 1,000 (docs/photos.md, "The panel").
PANEL_VERSION = 2
# Each generator is scored on this many draws of its noise and the figure is their mean: on version
# 1, one FastGAN export's encoder figure moved 1.1-1.4x between draws, as much as between seeds.
PANEL_DRAWS = 4


@dataclass(frozen=True)
class PanelSettings:
    """Sizes of the panel's sets and how its judges train (the defaults are the documented protocol)."""

    train_crops: int = 8000  # the runs' training folder (FOLDER/crops/train), as make-photo-crops makes it
    heldout_crops: int = 1000
    judge_crops: int = 9000  # the region judge's labelled crops
    num_images: int = 4000  # generated images per score; also the reference's and the floor's size
    encoder_crops: int = 4000  # the encoder's unlabelled training crops
    judge_epochs: int = 10
    judge_min_accuracy: float = 0.8
    judge_images: int = 2000  # generated images behind the region judge's full-size FID
    encoder: EncoderSettings = field(default_factory=EncoderSettings)

    def __post_init__(self) -> None:
        for name in ("train_crops", "judge_crops", "num_images", "encoder_crops", "judge_epochs", "judge_images"):
            if getattr(self, name) < 2:
                raise ValueError(f"PanelSettings.{name} must be >= 2; got {getattr(self, name)}")


def prepare(workdir: Path, folder: str, settings: PanelSettings) -> Dict[str, Path]:
    """The crops of ``folder`` under WORKDIR/FOLDER, each set built once: ``crops/train`` and
    ``crops/heldout`` (what make-photo-crops writes for the photos), and the region crops of the
    judge, of the reference and floor (``real``) and of the encoder, each with its own seed."""
    from benchmarks.photos.equal_time import make_region_crops
    from gan_accel.cli.make_photo_crops import write_split

    root = Path(workdir) / folder
    images, crop_size, _ = sources(folder)
    crops = root / "crops"
    if not (crops / "train").is_dir():
        partial = root / "crops.partial"
        write_split(images, partial / "train", settings.train_crops, crop_size, 64, SEEDS["train"])
        write_split(images, partial / "heldout", settings.heldout_crops, crop_size, 64, SEEDS["heldout"])
        partial.rename(crops)
    counts = {"judge": settings.judge_crops, "real": 2 * settings.num_images, "encoder": settings.encoder_crops}
    # The reference and floor's folder is named by its count: another num_images cuts its own set.
    folders = {name: root / (f"real_{count}" if name == "real" else name) for name, count in counts.items()}
    for name, count in counts.items():
        make_region_crops(folders[name], count, SEEDS[name], images, crop_size, GRIDS[folder])
    return {"train": crops / "train", "heldout": crops / "heldout", **folders}


def load_crops(folder: Path, channels: int, seed: int = 0) -> torch.Tensor:
    """float [-1, 1] crops at IMAGE_SIZE, shuffled with ``seed`` (the files are sorted by region)."""
    images = to_float_images(load_image_data("folder", str(folder), IMAGE_SIZE, channels).images)
    return images[torch.randperm(len(images), generator=torch.Generator().manual_seed(seed))]


def conform(images: torch.Tensor, channels: int) -> torch.Tensor:
    """Generated images as the panel sees real ones: IMAGE_SIZE px (the loader's resize), ``channels``."""
    if images.shape[-1] != IMAGE_SIZE:
        images = _resize_batch(images, IMAGE_SIZE)
    if images.shape[1] != channels:
        images = images.mean(1, keepdim=True) if channels == 1 else images.expand(-1, channels, -1, -1)
    return images.clamp(-1, 1)


class Panel:
    """The three yardsticks of one folder kind, built (or loaded from the cache) once."""

    def __init__(self, workdir: Path, folder: str, settings: PanelSettings = PanelSettings()) -> None:
        from benchmarks.photos.equal_time import region_judge

        self.settings = settings
        self.folder = folder
        self.channels = sources(folder)[2]
        self.data = prepare(workdir, folder, settings)
        cache = Path(workdir) / "cache" / folder
        real = load_crops(self.data["real"], self.channels)
        n = settings.num_images
        self.reference, self.floor_images = real[:n], real[n : 2 * n]
        with contextlib.redirect_stdout(io.StringIO()):  # the evaluator prints its cache use
            self.judge = region_judge(
                self.data["judge"],
                cache,
                self.channels,
                settings.judge_epochs,
                settings.judge_min_accuracy,
                settings.judge_images,
            )
        self.stats = ColourTexture(self.reference, self.floor_images)
        encoder_crops = drop_held_out(
            load_crops(self.data["encoder"], self.channels), self.reference, self.floor_images
        )
        self.encoder = SelfSupervised(encoder_crops, self.reference, self.floor_images, cache, settings.encoder)

    def describe(self) -> dict:
        """What a record says about the panel itself."""
        return {
            "version": PANEL_VERSION,
            "folder": self.folder,
            "num_images": self.settings.num_images,
            "judge_accuracy": self.judge.domain.accuracy,
            "floors": {
                "region_judge": self.judge.floor["fid"],
                "colour_texture": self.stats.floor,
                "ssl_encoder": self.encoder.floor,
            },
        }

    def score_images(self, images: torch.Tensor, intervals: bool = True) -> Dict[str, dict]:
        """``{yardstick: {value, floor, x_floor, interval}}`` of float [-1, 1] images (at least
        ``judge_images`` of them; the first ``num_images`` for the like-for-like figures);
        ``intervals``: the Fréchet yardsticks' bootstrap intervals too (None without)."""
        from benchmarks.photos.equal_time import Fixed

        images = conform(images, self.channels)
        judged = self.judge.evaluate_full(Fixed(images))
        n = self.settings.num_images
        return {
            "region_judge": {
                "value": judged.fid_at_floor_size,
                "floor": judged.fid_floor,
                "x_floor": judged.fid_at_floor_size / judged.fid_floor,
                "interval": None,
                "full": judged.fid,
                "full_interval": judged.intervals.get("fid"),
                "regions_covered": judged.classes_covered,
            },
            "colour_texture": self.stats.score(images[:n], intervals),
            "ssl_encoder": self.encoder.score(images[:n], intervals),
        }

    def score_generator(self, G: nn.Module, draws: int = PANEL_DRAWS) -> Dict[str, dict]:
        """Every yardstick for generator ``G``: the mean over ``draws`` draws of its noise (seeds 0,
        1, ...: the same whatever the generator), each draw's x floor kept as ``draws``."""
        from gan_accel.sampling import generate_images

        count = max(self.settings.num_images, self.settings.judge_images)
        # One draw's bootstrap interval says nothing of the mean's: it is computed only for one draw.
        return mean_of_draws(
            [
                self.score_images(generate_images(G.cpu().eval(), count, seed=d), intervals=draws == 1)
                for d in range(draws)
            ]
        )


def mean_of_draws(scored: List[Dict[str, dict]]) -> Dict[str, dict]:
    """Per yardstick, the mean value of several draws' scores (the first draw's other fields), its x
    floor, and each draw's x floor: how far the figure moves with the draw alone. One draw's
    bootstrap interval says nothing of the mean's, so it is kept only when there is one draw."""
    out = {}
    for name in YARDSTICKS:
        first = scored[0][name]
        values = [s[name]["value"] for s in scored]
        mean = sum(values) / len(values)
        out[name] = {
            **first,
            "value": mean,
            "x_floor": mean / first["floor"],
            "interval": first["interval"] if len(scored) == 1 else None,
            "draws": [v / first["floor"] for v in values],
        }
    return out


def load_quietly(folder: Path) -> nn.Module:
    """An exported generator (huggingface_hub prints on stdout while loading)."""
    from gan_accel.models import load_generator

    with contextlib.redirect_stdout(io.StringIO()):
        return load_generator(folder)


def run_networks(run_dir: Path) -> Tuple[nn.Module, nn.Module, dict, int]:
    """G and D as a run's ``config.json`` builds them (untrained), its config and its number of
    classes (read from its export, 0 without one)."""
    from gan_accel.models import build_models

    config = json.loads((Path(run_dir) / "config.json").read_text())
    exported = Path(run_dir) / "generator" / "config.json"
    num_classes = json.loads(exported.read_text()).get("num_classes", 0) if exported.is_file() else 0
    G, D = build_models(
        config["arch"],
        z_dim=config["z_dim"],
        channels=config["channels"],
        image_size=config["image_size"],
        g_channels=config["g_channels"],
        d_channels=config["d_channels"],
        d_norm=config["d_norm"],
        g_norm=config["g_norm"],
        num_classes=num_classes,
        progressive=float(config.get("progressive_share") or 0) > 0,
    )
    return G, D, config, num_classes


def checkpoint_generator(run_dir: Path, checkpoint: Path) -> nn.Module:
    """The EMA generator a checkpoint holds, with BatchNorm statistics recomputed for its weights
    as the run does before it exports or samples."""
    from safetensors.torch import load_file

    from gan_accel.gan.ema import EMA_FILE, recalibrate_batchnorm

    G, _, config, num_classes = run_networks(run_dir)
    G.load_state_dict(load_file(str(Path(checkpoint) / EMA_FILE)))
    recalibrate_batchnorm(G, config["z_dim"], num_classes, "cpu", seed=config["seed"])
    return G.eval().requires_grad_(False)


def flat(scores: Dict[str, dict]) -> Dict[str, float]:
    """``{yardstick: x_floor}``: what the tables and the verdict compare."""
    return {name: scores[name]["x_floor"] for name in YARDSTICKS}


def interval_text(score: dict) -> str:
    low_high: List[float] = score.get("interval") or []
    return f" [{low_high[0] / score['floor']:.2f}, {low_high[1] / score['floor']:.2f}]" if low_high else ""
