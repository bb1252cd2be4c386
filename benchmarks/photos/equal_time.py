"""Benchmark: your own photos, at equal wall-clock time (issue 22; docs/photos.md).

On crops of the three photos bundled with scikit-learn and matplotlib (gan-accel make-photo-crops:
8,000 training crops at 64 px, one sub-folder per photo, and 1,000 held-out crops), every run gets
the same --minutes of wall-clock time, start-up, data decoding and exports included:

  defaults   today's defaults (--preset none: the 64-channel DCGAN at 32 px, no augmentation, no
             evaluation), given the same time through --time_budget
  defaults_cmd  today's default command as it stands, `--dataset folder --data_dir DIR --channels 3
             --preset none`: 2,000 updates, whatever the time (it ends before --minutes)
  auto       the new default: the command a user types, `--dataset folder --data_dir DIR --time_budget`
  dcgan_ref  pytorch/examples' dcgan/main.py at its defaults (64 px, ngf = ndf = 64, nz 100, batch 64,
             Adam 2e-4 (0.5, 0.999), BCE with a sigmoid D, N(0, 0.02) init). It cannot be downloaded
             here: its architecture and training step are re-implemented below from its well-known
             code; it trains until the time is up. Its 64 px samples are downscaled to 32 px (area).
  and on a 500-image cut of the same folder: ada (auto), noaug (auto with --ada False) and
  diffaugment (auto with --ada False --diffaugment translation,cutout,color).

Every generator is scored the same way, by a judge that sees structure, not only colour: a small
CNN trained to tell apart 27 regions (each photo cut into a 3x3 grid; a crop's label is the cell of
its centre) on 9,000 fresh crops (another seed than the training and held-out crops), with domain
FID in its features: 2,000 generated images against 7,200 of those crops, and the like-for-like
figure, the first 1,800 generated images against the floor's reference, with the floor itself
(1,800 real crops against 1,800 others) and their ratio. A judge trained only to tell the three
photos apart saturates: colour and coarse texture are enough for it, so it scores colour blobs near
the floor. Two calibration rows show what the judge's numbers mean: 2,000 fresh real crops, and
the same crops blurred (Gaussian, sigma 1 px at 32 px: the photos' colours without their detail).
Each run also gets the number of photos its samples cover (a 3-photo classifier on the held-out
crops), and on the 500-image cut the overfitting gap of D (mean D logit on the training crops
minus on held-out crops; 0 = no memorisation).

    python -m benchmarks.photos equal_time --workdir /tmp/photos_bench --minutes 15 --seeds 3
    python -m benchmarks.photos equal_time --workdir /tmp/photos_bench --minutes 1 --only auto,dcgan_ref   # smoke test

Results: WORKDIR/results.json (one record per run) and a table on stdout (with several seeds: the median, then each seed's figure).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from gan_accel.data.images import load_image_data, to_float_images

RUNS = ("defaults", "defaults_cmd", "auto", "dcgan_ref", "ada", "noaug", "diffaugment")
CUT_RUNS = ("ada", "noaug", "diffaugment")
CUT = 500
REGIONS = 3  # the judge's grid over each photo: 3 x 3 cells, 27 classes
JUDGE_CROPS = 9000
JUDGE_IMAGES = 2000  # generated images per score
CALIBRATION_CROPS = 2000


# ---- data ------------------------------------------------------------------------------------
def make_data(workdir: Path) -> Dict[str, Path]:
    """WORKDIR/photos (8,000 + 1,000 held out) and WORKDIR/photos500/train (every 16th crop)."""
    photos = workdir / "photos"
    if not (photos / "train").is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gan_accel.cli.make_photo_crops",
                "--output_dir",
                str(photos),
                "--num_crops",
                "8000",
                "--num_heldout",
                "1000",
            ],
            check=True,
        )
    cut = workdir / "photos500" / "train"
    if not cut.is_dir():
        files = sorted((photos / "train").rglob("*.png"))
        for path in files[:: len(files) // CUT][:CUT]:
            target = cut / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    make_region_crops(workdir / "judge", JUDGE_CROPS, seed=2)
    make_region_crops(workdir / "calibration", CALIBRATION_CROPS, seed=3)
    return {
        "full": photos / "train",
        "cut": cut,
        "heldout": photos / "heldout",
        "judge": workdir / "judge",
        "calibration": workdir / "calibration",
    }


def make_region_crops(
    folder: Path,
    count: int,
    seed: int,
    photos: Optional[Dict[str, object]] = None,
    crop_size: int = 128,
    regions: Union[int, Dict[str, int]] = REGIONS,
) -> None:
    """``count`` crops (``crop_size`` source px at 64 px, as make-photo-crops makes them), split evenly
    between the photos, in one sub-folder per region: ``<photo>_r<row>c<col>``, the cell of a
    ``regions x regions`` grid over the photo that holds the crop's centre (``regions``: one grid for
    every photo, or one per photo's name). ``photos``: name -> PIL image, the bundled photos when
    None (the panel's other folders pass their own, and their grid)."""
    if folder.is_dir():
        return
    import numpy as np
    from PIL import Image

    from gan_accel.cli.make_photo_crops import bundled_photos, crop_boxes

    rng = np.random.default_rng(seed)
    photos = bundled_photos() if photos is None else photos
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for name in sorted(photos):
        photo = photos[name]
        width, height = photo.size
        grid = regions[name] if isinstance(regions, dict) else regions
        for number, box in enumerate(crop_boxes(photo, count // len(photos), crop_size, rng)):
            col = min(grid - 1, int((box[0] + box[2]) / 2 / width * grid))
            row = min(grid - 1, int((box[1] + box[3]) / 2 / height * grid))
            sub = partial / f"{name}_r{row}c{col}"
            sub.mkdir(parents=True, exist_ok=True)
            photo.crop(box).resize((64, 64), Image.BICUBIC).save(sub / f"{number:05d}.png")
    partial.rename(folder)


# ---- pytorch/examples dcgan/main.py, re-implemented at its defaults --------------------------
NZ, NGF, NDF, NC = 100, 64, 64, 3


class ExamplesGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(NGF * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 8, NGF * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 4, NGF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NGF, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF, NC, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.main(z)


class ExamplesDiscriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, NDF * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 4, NDF * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x).view(-1, 1).squeeze(1)


def examples_weights_init(m: nn.Module) -> None:
    name = m.__class__.__name__
    if name.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif name.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Downscaled(nn.Module):
    """The examples' 64 px G as the evaluator expects a generator: ``G(z)`` at 32 px, ``z_dim``."""

    z_dim = NZ
    num_classes = 0

    def __init__(self, G: nn.Module) -> None:
        super().__init__()
        self.G = G

    def forward(self, z: torch.Tensor, labels=None) -> torch.Tensor:
        return F.avg_pool2d(self.G(z.view(-1, NZ, 1, 1)), 2)


def train_examples_dcgan(folder: Path, seconds: float, seed: int) -> tuple:
    """dcgan/main.py's loop (batch 64, shuffled, one D step on real + fake, one G step) until the
    time is up; returns (G, updates, epochs). The clock includes loading the images, as its run would."""
    import torchvision.datasets as dset
    import torchvision.transforms as transforms

    start = time.monotonic()
    torch.manual_seed(seed)
    # Its data pipeline: ImageFolder decoded on the fly by 2 workers (--workers 2), shuffled, batch 64.
    dataset = dset.ImageFolder(
        root=str(folder),
        transform=transforms.Compose(
            [
                transforms.Resize(64),
                transforms.CenterCrop(64),
                transforms.ToTensor(),
                transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
            ]
        ),
    )
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2)
    G, D = ExamplesGenerator(), ExamplesDiscriminator()
    G.apply(examples_weights_init)
    D.apply(examples_weights_init)
    criterion = nn.BCELoss()
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    updates, epochs = 0, 0
    while time.monotonic() - start < seconds:
        for real, _ in loader:
            if time.monotonic() - start >= seconds:
                break
            b = real.shape[0]
            D.zero_grad()
            err_real = criterion(D(real), torch.full((b,), 1.0))
            err_real.backward()
            fake = G(torch.randn(b, NZ, 1, 1))
            err_fake = criterion(D(fake.detach()), torch.full((b,), 0.0))
            err_fake.backward()
            opt_d.step()
            G.zero_grad()
            err_g = criterion(D(fake), torch.full((b,), 1.0))
            err_g.backward()
            opt_g.step()
            updates += 1
        else:
            epochs += 1
    return Downscaled(G).eval(), updates, epochs


# ---- our runs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """A tuning run: the default command plus ``flags`` (--variant, or --cut_variant with ``cut``)."""

    flags: List[str]
    cut: bool = False  # on the 500-image cut, with D's overfitting gap


def on_cut(run: str, variants: Dict[str, Variant]) -> bool:
    return run in CUT_RUNS or (run in variants and variants[run].cut)


def toolkit_argv(
    run: str, data: Dict[str, Path], out: Path, minutes: float, seed: int, cache: Path, variants: Dict[str, Variant]
) -> List[str]:
    folder = data["cut"] if on_cut(run, variants) else data["full"]
    argv = [
        "--dataset",
        "folder",
        "--data_dir",
        str(folder),
        "--output_dir",
        str(out),
        "--seed",
        str(seed),
        "--data_cache_dir",
        str(cache / "images"),
        "--eval_cache_dir",
        str(cache / "eval"),
    ]
    if run != "defaults_cmd":  # today's default command has no budget: 2,000 updates
        argv += ["--time_budget", f"{minutes * 60:.0f}s"]
    if run in ("defaults", "defaults_cmd"):
        argv += ["--preset", "none", "--channels", "3"]
    elif run == "noaug":
        argv += ["--ada", "False"]
    elif run == "diffaugment":
        argv += ["--ada", "False", "--diffaugment", "translation,cutout,color"]
    return argv + (variants[run].flags if run in variants else [])


def prewarm(data: Dict[str, Path], workdir: Path, cache: Path) -> None:
    """Build the one-off caches (decoded images, the domain classifier of each folder) before the
    timed runs, so no run pays for them and the order of the runs does not matter."""
    for folder in (data["full"], data["cut"]):
        out = workdir / "runs" / "prewarm"
        argv = [
            "--dataset",
            "folder",
            "--data_dir",
            str(folder),
            "--output_dir",
            str(out),
            "--max_steps",
            "1",
            "--data_cache_dir",
            str(cache / "images"),
            "--eval_cache_dir",
            str(cache / "eval"),
            "--num_evaluations",
            "1",
            "--eval_num_images",
            "100",
        ]
        run_toolkit(argv, out)
    for path in data["full"].rglob("*.png"):  # the page cache, for dcgan_ref's on-the-fly decoding
        path.read_bytes()


def run_toolkit(argv: List[str], out: Path) -> float:
    """Train (or reuse the finished run in ``out`` when its ``OUT.done.json`` has the same argv); the wall time."""
    done = out.parent / f"{out.name}.done.json"
    finished = json.loads(done.read_text()) if done.is_file() and out.is_dir() else {}
    if finished.get("argv") == argv:
        return finished["wall_s"]
    if out.exists():
        shutil.rmtree(out)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "gan_accel.cli.train_gan", *argv], capture_output=True, text=True)
    wall = time.monotonic() - start
    (out.parent / f"{out.name}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{out.name} failed:\n{proc.stderr[-2000:]}")
    done.write_text(json.dumps({"wall_s": round(wall, 1), "argv": argv}) + "\n")
    return wall


@torch.no_grad()
def d_gap(run_dir: Path, train_folder: Path, heldout: Path) -> float:
    """Mean D logit on (up to 500) training crops minus on as many held-out crops, at the last checkpoint."""
    from safetensors.torch import load_file

    from benchmarks.photos.panel import run_networks

    _, D, config, _ = run_networks(run_dir)
    last = sorted((run_dir / "checkpoints").iterdir())[-1]
    D.load_state_dict(load_file(str(last / "model_1.safetensors")))
    D.eval()

    def mean_logit(folder: Path) -> float:
        images = load_image_data("folder", str(folder), config["image_size"], config["channels"]).images[:CUT]
        return D(to_float_images(images)).float().mean().item()

    return mean_logit(train_folder) - mean_logit(heldout)


class Fixed(nn.Module):
    """Given images as a generator: ``G(z)`` returns the next ``len(z)`` of them (calibration rows)."""

    z_dim = 1
    num_classes = 0

    def __init__(self, images: torch.Tensor) -> None:
        super().__init__()
        self.images = images
        self.next = 0
        self.anchor = nn.Parameter(torch.zeros(()))  # the evaluator reads the device from a parameter

    def forward(self, z: torch.Tensor, labels=None) -> torch.Tensor:
        batch = self.images[self.next : self.next + z.shape[0]]
        self.next = (self.next + z.shape[0]) % len(self.images)
        return batch


def score(judge, photos, G: nn.Module) -> dict:
    """The judge's figures for ``G`` and the number of photos its samples cover."""
    if isinstance(G, Fixed):
        G.next = 0
    result = judge.evaluate_full(G)
    if isinstance(G, Fixed):
        G.next = 0
    covered = photos.evaluate_full(G)
    return {
        "fid": result.fid,
        "fid_at_floor_size": result.fid_at_floor_size,
        "fid_floor": result.fid_floor,
        "x_floor": result.fid_at_floor_size / result.fid_floor,
        "regions_covered": result.classes_covered,
        "num_regions": result.num_classes,
        "photos_covered": covered.classes_covered,
        "num_photos": covered.num_classes,
    }


def calibration(data: Dict[str, Path], judge, photos) -> List[dict]:
    """The judge on real crops it has not seen, and on the same crops blurred (colour, no detail)."""
    import torchvision.transforms.functional as TF

    real = to_float_images(load_image_data("folder", str(data["calibration"]), image_size=32, channels=3).images)
    real = real[torch.randperm(len(real), generator=torch.Generator().manual_seed(0))]  # photos mixed in every batch
    return [
        {"run": "real crops", **score(judge, photos, Fixed(real))},
        {"run": "blurred crops", **score(judge, photos, Fixed(TF.gaussian_blur(real, 7, 1.0)))},
    ]


def region_judge(
    folder: Path,
    cache: Path,
    channels: int = 3,
    epochs: int = 10,
    min_accuracy: float = 0.8,
    num_images: int = JUDGE_IMAGES,
):
    """The 27-region judge of the region crops in ``folder`` (trained once, cached in ``cache/judge``);
    the panel (benchmarks/photos/panel.py) scores with the same one."""
    from gan_accel.metrics import GANEvaluator
    from gan_accel.metrics.domain import DomainTrainSettings

    return GANEvaluator(
        load_image_data("folder", str(folder), image_size=32, channels=channels),
        num_images=num_images,
        cache_dir=str(cache / "judge"),
        classifier=DomainTrainSettings(epochs=epochs),
        min_classifier_accuracy=min_accuracy,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", required=True, help="Crops, runs and results.json go here.")
    parser.add_argument("--minutes", type=float, default=15.0, help="Wall-clock time of every run.")
    parser.add_argument(
        "--seeds", type=int, default=1, help="Seeds per run (the table shows the median and each seed's figure)."
    )
    parser.add_argument("--first_seed", type=int, default=0, help="Seeds run from here.")
    parser.add_argument("--only", default=",".join(RUNS), help=f"Comma-separated subset of {','.join(RUNS)}.")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="An extra run: the auto command plus FLAGS on the full folder, e.g. "
        "'bs32=--batch_size 32' (repeatable; how the preset's table was tuned).",
    )
    parser.add_argument(
        "--cut_variant",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help=f"The same on the {CUT}-image cut (with D's overfitting gap), e.g. 'ada_k50=--ada_kimg 50'.",
    )
    args = parser.parse_args(argv)
    variants: Dict[str, Variant] = {}
    for flag, specs, cut in (("--variant", args.variant, False), ("--cut_variant", args.cut_variant, True)):
        for spec in specs:
            name, sep, flags = spec.partition("=")
            name = name.strip()
            if not sep or not name or name in RUNS or name in variants:
                parser.error(f"{flag} {spec!r}: write NAME=FLAGS with a new NAME, other than {', '.join(RUNS)}")
            variants[name] = Variant(shlex.split(flags), cut)
    runs = [r.strip() for r in args.only.split(",") if r.strip()] + list(variants)
    unknown = [r for r in runs if r not in RUNS and r not in variants]
    if unknown:
        parser.error(f"--only: unknown run(s) {', '.join(unknown)}; use a subset of {', '.join(RUNS)}")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    data = make_data(workdir)
    cache = workdir / "cache"
    prewarm(data, workdir, cache)

    from gan_accel.metrics import GANEvaluator
    from gan_accel.models import load_generator

    judge = region_judge(data["judge"], cache)
    photos = GANEvaluator(
        load_image_data("folder", str(data["heldout"]), image_size=32, channels=3),
        num_images=1000,
        cache_dir=str(cache / "eval_bench"),
    )
    print(
        f"judge: {judge.real.num_classes} regions, held-out accuracy {judge.domain.accuracy:.3f}, floor FID {judge.floor['fid']:.3f}"
    )
    results = workdir / "results.json"
    # Records of finished runs are kept: a benchmark stopped half-way resumes where it was.
    records = json.loads(results.read_text()) if results.is_file() else []
    if not any(r["run"] == "real crops" for r in records):
        records = calibration(data, judge, photos) + records
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for run in runs:
            flags = variants[run].flags if run in variants else []
            key = (run, seed, args.minutes, flags)
            if any((r["run"], r.get("seed"), r.get("minutes"), r.get("flags", [])) == key for r in records):
                continue
            out = workdir / "runs" / f"{run}_seed{seed}_{args.minutes:g}m"
            record = {"run": run, "seed": seed, "minutes": args.minutes, "flags": flags}
            if run == "dcgan_ref":
                G, updates, epochs = train_examples_dcgan(data["full"], args.minutes * 60, seed)
                record.update(score(judge, photos, G), updates=updates, epochs=epochs)
            else:
                wall = run_toolkit(toolkit_argv(run, data, out, args.minutes, seed, cache, variants), out)
                state = json.loads((sorted((out / "checkpoints").iterdir())[-1] / "trainer_state.json").read_text())
                best = out / "best_generator"
                record.update(
                    score(judge, photos, load_generator(best if best.is_dir() else out / "generator")),
                    wall_s=round(wall, 1),
                    updates=state["state"]["step"],
                    exported="best_generator" if best.is_dir() else "generator",
                )
                if best.is_dir():
                    # The run picks its best export with its own features; the judge's figure for
                    # the last generator says whether that choice cost or gained quality.
                    last = score(judge, photos, load_generator(out / "generator"))
                    record.update(last_fid=last["fid"], last_x_floor=last["x_floor"])
                if on_cut(run, variants):
                    record["d_gap"] = d_gap(out, data["cut"], data["heldout"])
            records.append(record)
            print(json.dumps(record), flush=True)
            results.write_text(json.dumps(records, indent=2) + "\n")
    print_table([r for r in records if r.get("minutes") in (None, args.minutes)], runs)
    return 0


def _median(rows: List[dict], key: str, fmt: str) -> str:
    """The median over the seeds, then each seed's figure in seed order when there are several.

    A bare median over seeds read as one run's figure and was copied into the docs as such; the
    per-seed figures beside it keep the spread in sight.
    """
    values = [r[key] for r in rows if r.get(key) is not None]
    if not values:
        return "-"
    median = format(statistics.median(values), fmt)
    return median if len(values) == 1 else f"{median} ({', '.join(format(v, fmt) for v in values)})"


def _coverage(rows: List[dict], key: str, total: str) -> str:
    """``27/27`` when every seed covered the same, else each seed's count: ``26, 27 of 27``."""
    values = [r[key] for r in rows if r.get(key) is not None]
    if not values:
        return "-"
    counts = ", ".join(str(v) for v in values)
    return f"{values[0]}/{rows[0][total]}" if len(set(values)) == 1 else f"{counts} of {rows[0][total]}"


def print_table(records: List[dict], runs: Sequence[str]) -> None:
    """A markdown table, the calibration rows first; with several seeds, medians and each seed's figure."""
    print(
        "\n| run | seeds | judge FID | last export's | at floor size | x floor | photos | regions | updates | wall | D gap |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for run in ["real crops", "blurred crops", *runs]:
        rows = [r for r in records if r["run"] == run]
        if not rows:
            continue
        rows = sorted(rows, key=lambda r: r.get("seed", 0))
        seeds = ", ".join(str(r["seed"]) for r in rows) if "seed" in rows[0] else "-"
        print(
            f"| {run} | {seeds} | {_median(rows, 'fid', '.2f')} | {_median(rows, 'last_fid', '.2f')} | "
            f"{_median(rows, 'fid_at_floor_size', '.2f')} | {_median(rows, 'x_floor', '.1f')} | "
            f"{_coverage(rows, 'photos_covered', 'num_photos')} | "
            f"{_coverage(rows, 'regions_covered', 'num_regions')} | {_median(rows, 'updates', ',.0f')} | "
            f"{_median(rows, 'wall_s', '.0f')} | {_median(rows, 'd_gap', '+.2f')} |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
