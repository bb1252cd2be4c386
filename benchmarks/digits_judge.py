"""An independent judge for generators of the digits (issue 33; docs/benchmarks.md).

A run selects its best generator with the domain classifier's FID (gan_accel/metrics/domain.py),
so that figure is also what the run was tuned against. This judge is a network the run never
sees: a small residual CNN (strided convolutions, no max-pooling, dropout before its head) with
its own augmentations (random rotation, scale and shift), AdamW with label smoothing and another
seed, trained on the digits at 32 px exactly as a run sees them (the project's loader for
``--dataset digits``). It trains on the training part of the evaluation's own split
(gan_accel/metrics/split.py: 1,438 images) and reports its accuracy on the 359 held-out digits,
which it never trains on because the floor is measured with them.

FID and KID in its penultimate features (128), by the project's FeatureDistance:
  fid          NUM_IMAGES generated images against the 1,438 real training images
  fid_at_floor_size  the first 359 generated images against the first 359 training images
  fid_floor    those 359 training images against the 359 held-out ones (a generator that draws
               fresh real digits would score this)
  x_floor      fid_at_floor_size / fid_floor: the like-for-like ratio, 359 images on every side
  x_floor_mean the same ratio averaged over every disjoint run of 359 generated images (2 of the
               default 1,000; 5 with --num_images 1795): which 359 images are drawn moves the
               ratio (docs/benchmarks.md)
plus the classes the judge sees in the samples and KL(real || generated) of its predicted labels
(gan_accel/metrics/coverage.py). Calibration rows, computed every time: the held-out digits (the
floor itself, 1.0x by construction), 359 other training digits (what copying the training set
scores), the held-out digits blurred (Gaussian, sigma 1 px), the held-out digits with their
pixels shuffled (the same ink, no shape), and the held-out digits as a 16 px run loads them,
upsampled to 32 px (what a perfect 16 px generator scores). A generator trained at 8 or 16 px is
scored with its images upsampled to 32 px, bilinear as the loader upsamples the 8x8 scans.

    python -m benchmarks.digits_judge --generator runs/demo/generator
    python -m benchmarks.digits_judge --run_dirs runs/demo runs/other --format markdown

The trained judge is cached in WORKDIR (a file named by its settings, the data and the split), so
scoring a run after the first takes seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from gan_accel.data.images import ImageData, _resize_batch, load_image_data, to_float_images
from gan_accel.errors import UserError, cli_entry, parser_error
from gan_accel.metrics.cache import data_fingerprint, load_cached, save_atomic, settings_key, tensor_hash
from gan_accel.metrics.classification import classification_metrics
from gan_accel.metrics.coverage import class_coverage
from gan_accel.metrics.distance import FeatureDistance
from gan_accel.metrics.domain import DomainFeatures, predict
from gan_accel.metrics.split import split_indices
from gan_accel.models import load_generator
from gan_accel.sampling import generate_images

IMAGE_SIZE = 32  # the judge's resolution (the digits as a 32 px run sees them)
SIZES = (8, 16, 32)  # generators it scores; below 32 px upsampled (Upsampled)
NUM_IMAGES = 1000  # generated images per score, as the demo's own evaluation
# Bump when the network or its training changes, so a cached judge of the old version is not reused.
JUDGE_VERSION = 1


@dataclass(frozen=True)
class JudgeSettings:
    """How the judge is trained (all part of its cache key)."""

    epochs: int = 30  # passes over the 1,438 training digits
    batch_size: int = 64
    lr: float = 2e-3  # AdamW, cosine-decayed to 0
    weight_decay: float = 5e-4
    label_smoothing: float = 0.1
    width: int = 32  # channels of the stem (features = 4 * width)
    dropout: float = 0.3  # before the head only: the features stay deterministic in eval mode
    max_degrees: float = 10.0  # augmentation: rotation, uniform in +-max_degrees
    max_scale: float = 0.1  # scale in 1 +- max_scale
    max_shift: float = 0.1  # shift in +-max_shift of the image side (3 px at 32 px)
    seed: int = 1  # not the domain classifier's 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "width"):
            if getattr(self, name) < (2 if name == "width" else 1):
                raise ValueError(f"JudgeSettings.{name} must be >= 1; got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"JudgeSettings.dropout must be in [0, 1); got {self.dropout}")


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with a skip; ``stride`` 2 halves the image (a 1x1 conv on the skip)."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = (
            nn.Identity()
            if stride == 1 and c_in == c_out
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.skip(x))


class DigitsJudge(nn.Module):
    """stem (32 px) -> 3 strided residual stages (16, 8, 4 px) -> global average pool (the
    features) -> dropout -> head. Strided from the first stage: the digits are 8x8 scans
    upsampled, and a 32 px stage would cost most of the training for no detail."""

    def __init__(self, channels: int, num_classes: int, width: int = 32, dropout: float = 0.3) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width // 2, 3, 1, 1, bias=False),
            nn.BatchNorm2d(width // 2),
            nn.ReLU(inplace=True),
            ResidualBlock(width // 2, width, stride=2),
            ResidualBlock(width, 2 * width, stride=2),
            ResidualBlock(2 * width, 4 * width, stride=2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.num_features = 4 * width
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(self.num_features, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """float images in [-1, 1] ``[B, C, H, W]`` -> ``[B, num_features]``."""
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.dropout(self.body(x)))


def augment(x: torch.Tensor, settings: JudgeSettings, gen: torch.Generator) -> torch.Tensor:
    """A random rotation, scale and shift per image (float [-1, 1]); the uncovered border is
    background (-1), not grey. No flips: a digit has a handedness."""
    b = x.shape[0]

    def uniform(limit: float) -> torch.Tensor:
        return (torch.rand(b, generator=gen) * 2 - 1) * limit

    angle = uniform(math.radians(settings.max_degrees))
    scale = 1 + uniform(settings.max_scale)
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0] = angle.cos() / scale
    theta[:, 0, 1] = -angle.sin() / scale
    theta[:, 1, 0] = angle.sin() / scale
    theta[:, 1, 1] = angle.cos() / scale
    theta[:, :, 2] = torch.stack([uniform(2 * settings.max_shift), uniform(2 * settings.max_shift)], 1)
    grid = F.affine_grid(theta.to(x.device), list(x.shape), align_corners=False)
    # grid_sample fills the outside with 0: sample x + 1 so that the fill is -1 after shifting back.
    return F.grid_sample(x + 1, grid, align_corners=False) - 1


def train_judge(images: torch.Tensor, labels: torch.Tensor, num_classes: int, settings: JudgeSettings) -> DigitsJudge:
    """Train on uint8 ``images [N, C, H, W]`` and int64 ``labels [N]`` (CPU); returns it in eval mode,
    the caller's random streams untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        model = DigitsJudge(images.shape[1], num_classes, settings.width, settings.dropout)
        opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
        n = images.shape[0]
        steps = settings.epochs * -(-n // settings.batch_size)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        gen = torch.Generator().manual_seed(settings.seed)
        model.train()
        for _ in range(settings.epochs):
            for idx in torch.randperm(n, generator=gen).split(settings.batch_size):
                x = augment(to_float_images(images[idx]), settings, gen)
                loss = F.cross_entropy(model(x), labels[idx], label_smoothing=settings.label_smoothing)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
    return model.eval()


@dataclass
class Judge:
    """A trained judge, its held-out accuracy and the split it was trained and measured on."""

    model: DigitsJudge
    accuracy: float
    train_idx: torch.Tensor
    heldout_idx: torch.Tensor
    path: Path  # its cache file


def load_or_train_judge(real: ImageData, workdir: Path, settings: JudgeSettings = JudgeSettings()) -> Judge:
    """The judge of ``real``, loaded from ``workdir`` or trained on the evaluation's training part
    and saved there (the held-out part stays out of its training: the floor is measured with it)."""

    train_idx, heldout_idx = split_indices(len(real))
    key = settings_key(
        version=JUDGE_VERSION, data=data_fingerprint(real), split=tensor_hash(heldout_idx), **asdict(settings)
    )
    path = workdir / f"digits_judge-{key}.pt"
    model = DigitsJudge(real.channels, real.num_classes, settings.width, settings.dropout)
    cached = load_cached(path)
    if cached is not None:
        model.load_state_dict(cached["state_dict"])
        return Judge(model.eval(), cached["accuracy"], train_idx, heldout_idx, path)
    model = train_judge(real.images[train_idx], real.labels[train_idx], real.num_classes, settings)
    preds = predict(model, real.images[heldout_idx], torch.device("cpu"))
    accuracy = classification_metrics(preds, real.labels[heldout_idx], real.num_classes)["accuracy"]
    save_atomic({"state_dict": model.state_dict(), "accuracy": accuracy}, path)
    return Judge(model, accuracy, train_idx, heldout_idx, path)


class Scorer:
    """The judge's figures for any set of float [-1, 1] images: the references are fed once."""

    def __init__(self, judge: Judge, real: ImageData) -> None:

        self.judge = judge
        self.real = real
        features = DomainFeatures(judge.model, judge.path.stem)  # penultimate features, float64, eval mode
        self.num_floor = min(len(judge.heldout_idx), len(judge.train_idx))
        self.train = to_float_images(real.images[judge.train_idx])
        self.heldout = to_float_images(real.images[judge.heldout_idx])
        self.full = FeatureDistance(features)
        self.full.set_reference(self.train.split(250))
        self.at_floor_size = FeatureDistance(features)
        self.at_floor_size.set_reference(self.train[: self.num_floor].split(250))
        self.floor = self.at_floor_size.score(self.heldout[: self.num_floor].split(250))

    def round_trip(self, size: int) -> torch.Tensor:
        """The held-out digits as a ``size`` px run sees them (the loader at that size), upsampled
        to 32 px: what a perfect generator at ``size`` px scores."""
        small = load_image_data("digits", image_size=size, channels=1)
        return upsample(to_float_images(small.images[self.judge.heldout_idx]))

    @torch.no_grad()
    def score(self, images: torch.Tensor) -> Dict[str, float]:
        """FID/KID of all ``images`` against the training digits, of the first ``num_floor`` against
        the floor's reference, their ratio to the floor, and the classes the judge sees in them."""

        if len(images) < self.num_floor:
            raise UserError(
                f"--num_images: {len(images)} images cannot be compared with the floor's {self.num_floor}; "
                f"pass at least {self.num_floor}"
            )
        full = self.full.score(images.split(250))
        n = self.num_floor
        # Disjoint draws of the floor's size; the first is the one x_floor has always reported.
        draws = [self.at_floor_size.score(images[i : i + n].split(250)) for i in range(0, len(images) - n + 1, n)]
        same = draws[0]
        ratios = [d["fid"] / self.floor["fid"] for d in draws]
        preds = torch.cat([self.judge.model(chunk).argmax(1) for chunk in images.split(250)])
        coverage = class_coverage(preds, self.real.labels[self.judge.train_idx], self.real.num_classes)
        return {
            "num_images": len(images),
            "fid": full["fid"],
            "kid": full["kid_mean"],
            "num_floor": self.num_floor,
            "fid_at_floor_size": same["fid"],
            "kid_at_floor_size": same["kid_mean"],
            "fid_floor": self.floor["fid"],
            "kid_floor": self.floor["kid_mean"],
            "x_floor": ratios[0],
            "x_floor_draws": ratios,
            "x_floor_mean": sum(ratios) / len(ratios),
            "classes_covered": coverage["classes_covered"],
            "num_classes": coverage["num_classes"],
            "kl": coverage["kl"],
        }


def blurred(images: torch.Tensor) -> torch.Tensor:
    """Gaussian blur, sigma 1 px: the digits' layout without their strokes' detail."""
    import torchvision.transforms.functional as TF

    return TF.gaussian_blur(images, 7, 1.0)


def shuffled_pixels(images: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """Each image's pixels in a random order of its own: the same ink, no shape."""
    gen = torch.Generator().manual_seed(seed)
    flat = images.flatten(1)
    order = torch.stack([torch.randperm(flat.shape[1], generator=gen) for _ in range(len(flat))])
    return flat.gather(1, order).view_as(images)


def calibration(scorer: Scorer) -> List[dict]:
    """What the judge's numbers mean: real digits it was not trained on score 1x the floor, copies of
    training digits show how far memorising would get, blurred and shuffled digits must score far above."""
    n = scorer.num_floor
    heldout = scorer.heldout[:n]
    others = scorer.train[n : 2 * n]  # not in the floor's reference
    rows = [
        ("held-out digits (the floor itself)", heldout),
        ("other training digits (copies)", others),
        ("held-out digits blurred (sigma 1 px)", blurred(heldout)),
        ("held-out digits, pixels shuffled", shuffled_pixels(heldout)),
        ("held-out digits at 16 px, upsampled", scorer.round_trip(16)[:n]),
    ]
    return [{"run": name, **scorer.score(images)} for name, images in rows if len(images) >= n]


def generators_to_score(generators: Sequence[str], run_dirs: Sequence[str]) -> List[Tuple[str, str]]:
    """(name, folder) of every generator to score: each --generator, and generator/ and
    best_generator/ of each --run_dirs folder. Checked before anything is trained or written."""
    out = [(path, path) for path in generators]
    for run in run_dirs:
        found = [(str(Path(run) / name), str(Path(run) / name)) for name in ("generator", "best_generator")]
        found = [pair for pair in found if Path(pair[1]).is_dir()]
        if not found:
            raise UserError(
                f"--run_dirs {run}: no generator/ or best_generator/ in it; pass the output_dir of a finished train-gan run"
            )
        out += found
    if not out:
        raise UserError("nothing to score: pass --generator FOLDER or --run_dirs RUN_DIR")
    return out


class Upsampled(nn.Module):
    """A generator trained below the judge's 32 px, its images upsampled to 32 px as the loader
    upsamples the 8x8 scans (bilinear): the digits have no detail above 8 px, so a run may train
    at 16 px for a quarter of the cost. The calibration row "held-out digits at 16 px, upsampled"
    shows what the round trip itself costs."""

    def __init__(self, G: nn.Module) -> None:
        super().__init__()
        self.G = G
        self.z_dim = G.z_dim
        self.num_classes = getattr(G, "num_classes", 0)

    def forward(self, z: torch.Tensor, labels: Optional[torch.Tensor] = None) -> torch.Tensor:
        return upsample(self.G(z, labels))


def upsample(images: torch.Tensor) -> torch.Tensor:
    """``[B, 1, s, s]`` -> ``[B, 1, 32, 32]`` by the loader's own resize (bilinear)."""
    return _resize_batch(images, IMAGE_SIZE)


def load_generators(pairs: Sequence[Tuple[str, str]]) -> List[Tuple[str, nn.Module]]:
    """Each generator through the project's loader; one at 8 or 16 px is scored upsampled
    (:class:`Upsampled`); one that does not make 1-channel square images of those sizes or 32 px is refused."""

    loaded = []
    for name, folder in pairs:
        # huggingface_hub prints "Loading weights from local directory" on stdout: keep stdout JSON.
        with contextlib.redirect_stdout(io.StringIO()):
            G = load_generator(folder)
        with torch.no_grad():
            shape = tuple(G(torch.zeros(1, G.z_dim), None).shape[1:])
        if shape not in [(1, s, s) for s in SIZES]:
            raise UserError(
                f"{folder}: makes images of shape {shape}; the judge scores digits generators of shape "
                f"(1, S, S) with S one of {', '.join(map(str, SIZES))} (configs/digits.yaml: 32)"
            )
        loaded.append((name, G if shape[-1] == IMAGE_SIZE else Upsampled(G)))
    return loaded


def markdown(report: dict) -> str:
    lines = [
        f"judge: held-out accuracy {report['judge']['heldout_accuracy']:.3f}; "
        f"x floor at {report['judge']['num_floor']} images on every side",
        "",
        "| run | judge FID (N) | at floor size | floor | x floor | x floor, mean (draws) | KID | classes | KL(real‖gen) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['run']} | {row['fid']:.2f} ({row['num_images']}) | {row['fid_at_floor_size']:.2f} | "
            f"{row['fid_floor']:.2f} | {row['x_floor']:.2f} | {row['x_floor_mean']:.2f} ({len(row['x_floor_draws'])}) | "
            f"{row['kid']:.4f} | "
            f"{row['classes_covered']}/{row['num_classes']} | {row['kl']:.3f} |"
        )
    return "\n".join(lines)


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.digits_judge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.error = parser_error
    parser.add_argument("--generator", action="append", default=[], help="A generator folder (repeatable).")
    parser.add_argument(
        "--run_dirs", nargs="+", default=[], help="Run folders: their generator/ and best_generator/ are scored."
    )
    parser.add_argument("--workdir", default="runs/digits_judge", help="Where the trained judge is cached.")
    parser.add_argument(
        "--num_images", type=int, default=NUM_IMAGES, help="Generated images per score (the floor's size at least)."
    )
    parser.add_argument(
        "--judge_epochs",
        type=int,
        default=JudgeSettings.epochs,
        help="The judge's training passes (part of its cache key).",
    )
    parser.add_argument("--format", choices=("json", "markdown"), default="json", help="What goes to stdout.")
    parser.add_argument("--debug", action="store_true", help="A traceback instead of one line on errors.")
    args = parser.parse_args(argv)
    if args.judge_epochs < 1:
        raise UserError(f"--judge_epochs {args.judge_epochs}: pass 1 or more")
    real = load_image_data("digits", image_size=IMAGE_SIZE, channels=1)
    num_floor = min(len(idx) for idx in split_indices(len(real)))
    if args.num_images < num_floor:
        raise UserError(f"--num_images {args.num_images}: pass at least the floor's size, {num_floor}")
    generators = load_generators(generators_to_score(args.generator, args.run_dirs))
    settings = JudgeSettings(epochs=args.judge_epochs)

    judge = load_or_train_judge(real, Path(args.workdir), settings)
    scorer = Scorer(judge, real)
    rows = calibration(scorer)
    for name, G in generators:
        rows.append({"run": name, **scorer.score(generate_images(G, args.num_images, seed=0))})
    report = {
        "judge": {
            "heldout_accuracy": judge.accuracy,
            "num_train": len(judge.train_idx),
            "num_heldout": len(judge.heldout_idx),
            "num_floor": scorer.num_floor,
            "settings": asdict(settings),
            "cache": str(judge.path),
        },
        "rows": rows,
    }
    print(json.dumps(report, indent=2) if args.format == "json" else markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
