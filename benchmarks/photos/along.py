"""Benchmark: quality along a run, by the panel (issue 56; docs/photos.md, "The panel").

Scores the EMA generator of every kept checkpoint (``checkpoints/step_*``, BatchNorm statistics
recomputed as the run does before it exports), ``best_generator/`` and ``generator/`` with the
panel (benchmarks/photos/panel.py), and prints a table: step, minutes into the run, the run's own FID at
that step (where it evaluated there), and each yardstick's x floor. Then, per yardstick: where
quality peaks, whether it falls after the peak, and how far the step best_generator/ holds sits
from that peak.

A run keeps 2 checkpoints by default: without --run_dir this command trains one that keeps them
all (the default command on the folder, plus --setting's flags, with --checkpointing_steps
--checkpoint_every and no limit on how many are kept):

    python -m benchmarks.photos along --workdir /tmp/panel --folder photos --minutes 15 --seed 0 --checkpoint_every 500
    python -m benchmarks.photos along --workdir /tmp/panel --folder photos --run_dir RUN   # a finished run

Results: WORKDIR/along_RUN.json, and with --record NAME benchmarks/results/NAME.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import List, Optional, Sequence

from benchmarks.photos.folders import FOLDERS, missing
from benchmarks.photos.panel import (
    LABELS,
    PANEL_VERSION,
    YARDSTICKS,
    Panel,
    PanelSettings,
    checkpoint_generator,
    flat,
    load_quietly,
)
from benchmarks.photos.panel_verdict import along_run_summary
from benchmarks.speed.report import machine

RESULTS = Path(__file__).resolve().parents[1] / "results"


def run_times(run_dir: Path):
    """Steps -> minutes into the run (from metrics.jsonl's ``time_s``), and ``{step: the run's FID}``."""
    from gan_accel.loop.plots import minutes_of_steps

    steps, times, fids = [], [], {}
    path = run_dir / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "time_s" in row and "step" in row:
            steps.append(row["step"])
            times.append(row["time_s"])
        if "eval/fid" in row:
            fids[row["step"]] = row["eval/fid"]
    return minutes_of_steps((steps, times)), fids


def points_of(run_dir: Path) -> List[tuple]:
    """``(name, step, generator folder or checkpoint)`` to score, checkpoints in step order."""
    points = []
    for checkpoint in sorted((run_dir / "checkpoints").glob("step_*")):
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        points.append((checkpoint.name, state["state"]["step"], checkpoint))
    last_step = points[-1][1] if points else None
    best = run_dir / "best_generator"
    if best.is_dir():
        score_file = best / "score.json"
        step = json.loads(score_file.read_text()).get("step") if score_file.is_file() else None
        points.append(("best_generator", step, best))
    if (run_dir / "generator").is_dir():
        points.append(("generator", last_step, run_dir / "generator"))
    return points


def score_along(panel: Panel, run_dir: Path) -> dict:
    """Every point's panel figures, the table's rows and the summary lines."""
    to_minutes, fids = run_times(run_dir)
    rows = []
    for name, step, where in points_of(run_dir):
        G = checkpoint_generator(run_dir, where) if name.startswith("step_") else load_quietly(where)
        scores = panel.score_generator(G)
        minutes = float(to_minutes(step)) if to_minutes is not None and step is not None else None
        rows.append({"point": name, "step": step, "minutes": minutes, "run_fid": fids.get(step), "panel": scores})
    series = [{"step": r["step"], "scores": flat(r["panel"])} for r in rows if r["point"].startswith("step_")]
    best = next((r["step"] for r in rows if r["point"] == "best_generator"), None)
    return {
        "version": PANEL_VERSION,
        "run_dir": str(run_dir),
        "rows": rows,
        "summary": along_run_summary(series, best),
    }


def along_table(result: dict) -> str:
    head = "| point | step | minutes | run's FID | " + " | ".join(f"{LABELS[n]}, x floor" for n in YARDSTICKS) + " |"
    lines = [head, "|" + "---|" * (len(YARDSTICKS) + 4)]
    for row in result["rows"]:
        minutes = "-" if row["minutes"] is None else f"{row['minutes']:.1f}"
        fid = "-" if row["run_fid"] is None else f"{row['run_fid']:.3f}"
        step = "-" if row["step"] is None else f"{row['step']:,}"
        cells = " | ".join(f"{row['panel'][n]['x_floor']:.2f}" for n in YARDSTICKS)
        lines.append(f"| {row['point']} | {step} | {minutes} | {fid} | {cells} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.photos along",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workdir", required=True, help="The panel's crops and caches (and the trained run) go here.")
    parser.add_argument("--folder", choices=FOLDERS, default="photos", help="The folder the run trained on.")
    parser.add_argument("--run_dir", help="A finished train-gan run to score; without it one is trained.")
    parser.add_argument(
        "--minutes", type=float, default=15.0, help="--time_budget of the run trained here, in minutes."
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the run trained here.")
    parser.add_argument(
        "--checkpoint_every", type=int, default=500, help="Steps between the trained run's kept checkpoints."
    )
    parser.add_argument(
        "--setting", default="default=", metavar="NAME=FLAGS", help="The trained run: the default command plus FLAGS."
    )
    parser.add_argument("--record", help="Also write benchmarks/results/RECORD.json.")
    args = parser.parse_args(argv)
    if missing(args.folder):
        parser.error(f"--folder {args.folder}: {missing(args.folder)}")
    if args.checkpoint_every < 1 or args.minutes <= 0:
        parser.error("--checkpoint_every must be 1 or more and --minutes above 0")
    if args.run_dir and not (Path(args.run_dir) / "checkpoints").is_dir():
        parser.error(f"--run_dir {args.run_dir}: no checkpoints/ in it; pass the output_dir of a train-gan run")
    return run(args, list(sys.argv[1:] if argv is None else argv))


def run(args: argparse.Namespace, argv: List[str], panel_settings: Optional[PanelSettings] = None) -> int:
    from benchmarks.photos.side_by_side import parse_setting, run_env, run_group, train_argv

    workdir = Path(args.workdir)
    panel = Panel(workdir, args.folder, panel_settings or PanelSettings())
    if args.run_dir:
        run_dir = Path(args.run_dir)
    else:
        setting = parse_setting(args.setting)
        run_dir = workdir / "runs" / args.folder / f"along_{setting.name}_seed{args.seed}_{args.minutes:g}m"
        flags = train_argv(
            setting, panel.data["train"], run_dir, args.minutes, args.seed, workdir / "cache", args.checkpoint_every
        )
        run_group([(flags, run_env(setting, "alternate"), run_dir)])
    result = score_along(panel, run_dir)
    print(along_table(result) + "\n")
    print("\n".join(result["summary"]))
    (workdir / f"along_{run_dir.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.record:
        command = "python -m benchmarks.photos along " + " ".join(shlex.quote(a) for a in argv)
        record = {
            "date": time.strftime("%Y-%m-%d"),
            "cpu": machine(),
            "command": command,
            "panel": panel.describe(),
            **result,
        }
        (RESULTS / f"{args.record}.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
