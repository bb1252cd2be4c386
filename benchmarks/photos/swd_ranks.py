"""Benchmark: does a run's own SWD rank generators as the panel does? (issue 56; docs/photos.md,
"Does the run's SWD rank like the panel?").

A run evaluates with its domain FID and the multi-scale SWD (gan_accel/metrics/swd.py), and the
first of them that still tells generated from real images picks ``best_generator/``. This scores
every generator the panel has already scored in WORKDIR (each run's ``generator/`` in
``panel_FOLDER.json``, each checkpoint in ``along_*.json``, panel version 2) with the run's SWD
against the folder's training crops, as a run does, at several sizes (images per side x patches per
image), on two draws of the noise. Per size it prints the real-vs-real values (other training crops
against the same reference), the widest ratio between one generator's two draws, and the rank
correlation (Spearman) of the SWD with each yardstick of the panel: 1 would rank as the panel does.

    python -m benchmarks.photos swd_ranks --workdir /tmp/panel --folder photos --record swd_ranks_photos_xeon

Results: WORKDIR/swd_ranks_FOLDER.json, and with --record NAME benchmarks/results/NAME.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from benchmarks.photos.folders import FOLDERS, sources
from benchmarks.photos.panel import (
    LABELS,
    PANEL_VERSION,
    YARDSTICKS,
    checkpoint_generator,
    flat,
    load_crops,
    load_quietly,
)

RESULTS = Path(__file__).resolve().parents[1] / "results"
SIZES = ((256, 128), (1000, 32), (1000, 128))  # (images per side, patches per image); the first is a run's
REAL_DRAWS = 3


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Rank correlation of two equal-length sequences (ties broken by order: the values are continuous)."""

    def ranks(values: Sequence[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float64).argsort().argsort().double()

    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()))


def scored_generators(workdir: Path, folder: str) -> List[Tuple[str, Callable, Dict[str, float]]]:
    """``(name, load, {yardstick: x_floor})`` of every generator the panel scored at this version:
    each run's last ``generator/`` and each kept checkpoint of an along-the-run record."""
    runs = workdir / "runs" / folder
    out = []
    records = workdir / f"panel_{folder}.json"
    for r in json.loads(records.read_text()) if records.is_file() else []:
        name = f"{r['setting']}_seed{r['seed']}_{r['minutes']:g}m"
        scores = r.get("last_panel", r["panel"])
        if r.get("version") == PANEL_VERSION and (runs / name / "generator").is_dir():
            out.append((name, lambda where=runs / name / "generator": load_quietly(where), flat(scores)))
    for path in sorted(workdir.glob("along_*.json")):
        along = json.loads(path.read_text())
        run_dir = Path(along["run_dir"])
        if along.get("version") != PANEL_VERSION or not run_dir.is_dir():
            continue
        for row in along["rows"]:
            if row["point"].startswith("step_"):
                where = run_dir / "checkpoints" / row["point"]
                load = lambda run_dir=run_dir, where=where: checkpoint_generator(run_dir, where)  # noqa: E731
                out.append((f"{run_dir.name}/{row['point']}", load, flat(row["panel"])))
    return out


def measure(
    train: torch.Tensor, generators: Sequence[Tuple[str, Callable, Dict[str, float]]], sizes=SIZES, count: int = 1000
) -> List[dict]:
    """Per size: the real-vs-real values, each generator's SWD on two draws, the widest draw ratio
    and the Spearman correlation of the first draw with each yardstick."""
    from gan_accel.metrics.swd import SWDReference
    from gan_accel.sampling import generate_images

    references = {size: SWDReference(train[: size[0]], 0, per_image=size[1], max_images=size[0]) for size in sizes}
    rows = {size: {"images": size[0], "patches": size[1], "generators": {}} for size in sizes}
    for (n, per), ref in references.items():
        others = [train[n * (d + 1) : n * (d + 2)] for d in range(REAL_DRAWS)]  # disjoint from the reference
        rows[(n, per)]["real_vs_real"] = [ref.score(images).value for images in others]
    for name, load, _ in generators:
        G = load().cpu().eval()
        draws = [generate_images(G, count, seed=seed) for seed in (0, 1)]
        for size, ref in references.items():
            rows[size]["generators"][name] = [ref.score(images).value for images in draws]
    panel = {name: scores for name, _, scores in generators}
    for row in rows.values():
        values = row["generators"]
        row["draw_ratio"] = max(max(v) / min(v) for v in values.values()) if values else None
        row["spearman"] = {
            y: spearman([v[0] for v in values.values()], [panel[name][y] for name in values]) for y in YARDSTICKS
        }
    return list(rows.values())


def report(rows: Sequence[dict]) -> str:
    head = "| images x patches | real vs real | SWD of the generators | one generator's two draws, widest | "
    head += " | ".join(f"Spearman with {LABELS[y]}" for y in YARDSTICKS) + " |"
    lines = [head, "|" + "---|" * (4 + len(YARDSTICKS))]
    for row in rows:
        firsts = [v[0] for v in row["generators"].values()]
        span = f"{min(firsts):.1f}-{max(firsts):.1f}" if firsts else "-"
        real = ", ".join(f"{v:.1f}" for v in row["real_vs_real"])
        ratio = "-" if row["draw_ratio"] is None else f"{row['draw_ratio']:.2f}x"
        cells = " | ".join(f"{row['spearman'][y]:+.2f}" for y in YARDSTICKS)
        lines.append(f"| {row['images']:,} x {row['patches']} | {real} | {span} | {ratio} | {cells} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.photos swd_ranks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workdir", required=True, help="The panel's work folder (its runs and records).")
    parser.add_argument("--folder", choices=FOLDERS, default="photos", help="The folder the runs trained on.")
    parser.add_argument("--record", help="Also write benchmarks/results/RECORD.json.")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    train_dir = workdir / args.folder / "crops" / "train"
    if not train_dir.is_dir():
        parser.error(f"--workdir {workdir}: no {args.folder}/crops/train in it; run the panel there first")
    generators = scored_generators(workdir, args.folder)
    if len(generators) < 3:
        parser.error(f"--workdir {workdir}: {len(generators)} generator(s) scored by panel version {PANEL_VERSION}")
    train = load_crops(train_dir, sources(args.folder)[2], seed=5)
    rows = measure(train, generators)
    print(f"{len(generators)} generators scored by the panel\n\n" + report(rows))
    result = {"generators": len(generators), "rows": rows}
    (workdir / f"swd_ranks_{args.folder}.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.record:
        command = "python -m benchmarks.photos swd_ranks " + " ".join(
            shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)
        )
        record = {"date": time.strftime("%Y-%m-%d"), "command": command, **result}
        (RESULTS / f"{args.record}.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
