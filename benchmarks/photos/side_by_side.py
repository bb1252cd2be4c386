"""Benchmark: settings side by side over seeds, judged by the panel (issue 56; docs/photos.md, "The panel").

Each --setting is the default command, `train-gan --dataset folder --data_dir FOLDER --time_budget
MINUTES`, plus its flags (and environment variables written before them); the first is the
baseline every other is compared with. Every setting runs with every seed, in one of two layouts:

  pairs      two runs started together, one thread each (OMP_NUM_THREADS=1 unless a setting sets
             it): the same machine at the same moment, so load and clock drift hit both alike
  alternate  one run at a time, the order of the settings reversed on every other seed; the way
             to compare "as the user runs it" (default threads) with "held to one thread":
             --setting 'as_user=' --setting 'one_thread=OMP_NUM_THREADS=1' --layout alternate

Then the generator each run exports (best_generator/ where the run kept one, else generator/;
the last generator/ is scored too) is scored by the panel (benchmarks/photos/panel.py), and a table
gives each yardstick's x floor per seed, its median and spread (worst / best); each candidate
gets a verdict: adopted only when every yardstick prefers it, median over at least 3 seeds.

    python -m benchmarks.photos panel --workdir /tmp/panel --folder photos --minutes 15 --seeds 3 \\
        --setting 'today=' --setting 'fp32=--measure_precision False' --record panel_fp32_epyc

Results: WORKDIR/panel_FOLDER.json (every run's record; a stopped benchmark resumes), with
--record NAME benchmarks/results/NAME.json, and WORKDIR/panel_FOLDER_grids.png: the last sample
grid of every run, a row per setting and a column per seed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from benchmarks.photos.folders import FOLDERS, missing
from benchmarks.photos.panel import PANEL_VERSION, Panel, PanelSettings, load_quietly
from benchmarks.photos.panel_verdict import draw_noise_line, table, verdict, verdict_line
from benchmarks.speed.report import machine

RESULTS = Path(__file__).resolve().parents[1] / "results"
ENV_TOKEN = re.compile(r"^[A-Z][A-Z0-9_]*=")


@dataclass(frozen=True)
class Setting:
    """One lever's command: ``env`` before it, ``flags`` after the default command."""

    name: str
    env: Dict[str, str]
    flags: List[str]


def parse_setting(spec: str) -> Setting:
    """``NAME=[VAR=VALUE ...] FLAGS``, e.g. ``one_thread=OMP_NUM_THREADS=1 --ema_decay 0.9995``."""
    name, sep, rest = spec.partition("=")
    name = name.strip()
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"--setting {spec!r}: write NAME=FLAGS, NAME of letters, digits, _ . -")
    tokens = shlex.split(rest)
    env = {}
    while tokens and ENV_TOKEN.match(tokens[0]):
        key, _, value = tokens.pop(0).partition("=")
        env[key] = value
    return Setting(name, env, tokens)


def schedule(settings: Sequence[Setting], seeds: Sequence[int], layout: str) -> List[List[Tuple[Setting, int]]]:
    """Groups of runs started together: pairs of (setting, seed) in ``pairs``, single runs in
    ``alternate`` with the settings' order reversed on every other seed."""
    order: List[Tuple[Setting, int]] = []
    for index, seed in enumerate(seeds):
        group = list(settings) if layout == "pairs" or index % 2 == 0 else list(reversed(settings))
        order += [(s, seed) for s in group]
    size = 2 if layout == "pairs" else 1
    return [order[i : i + size] for i in range(0, len(order), size)]


def run_env(setting: Setting, layout: str) -> Dict[str, str]:
    env = dict(os.environ, TQDM_DISABLE="1")
    if layout == "pairs":  # two runs share the cores: one thread each
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(setting.env)
    return env


def train_argv(
    setting: Setting, folder: Path, out: Path, minutes: float, seed: int, cache: Path, keep_every: int
) -> List[str]:
    """The default command on ``folder`` plus the setting's flags (benchmarks/photos/equal_time.py's runs)."""
    from benchmarks.photos.equal_time import Variant, toolkit_argv

    argv = toolkit_argv(
        setting.name,
        {"full": folder, "cut": folder},
        out,
        minutes,
        seed,
        cache,
        {setting.name: Variant(setting.flags)},
    )
    if keep_every:  # enough checkpoints for scoring along the run (benchmarks/photos/along.py)
        argv += ["--checkpointing_steps", str(keep_every), "--checkpoints_total_limit", "1000"]
    return argv


def run_group(jobs: Sequence[Tuple[List[str], Dict[str, str], Path]]) -> List[dict]:
    """Start every ``(argv, env, out)`` of the group at once, wait for all; each one's ``OUT.done.json``
    (its wall time ``wall_s``, and ``load_avg`` where kept). A finished run (``OUT.done.json`` with
    the same argv and env) is not run again."""
    started = []
    for argv, env, out in jobs:
        done = out.parent / f"{out.name}.done.json"
        key = {"argv": argv, "env": {k: env[k] for k in sorted(env) if k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}}
        finished = json.loads(done.read_text()) if done.is_file() and out.is_dir() else {}
        if {k: finished.get(k) for k in key} == key:
            started.append((None, finished, out, done, key))
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        log = open(out.parent / f"{out.name}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "gan_accel.cli.train_gan", *argv], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        started.append((proc, time.monotonic(), out, done, key))
    finished_runs = []
    for proc, start, out, done, key in started:
        if proc is None:
            finished_runs.append(start)
            continue
        if proc.wait() != 0:
            raise RuntimeError(f"{out.name} failed: see {out.parent / (out.name + '.log')}")
        wall = round(time.monotonic() - start, 1)
        # The load averages at the end of the run (1, 5, 15 minutes): what shared the cores while it
        # trained, for the record (a side-by-side pair reads about 2.0 on 2 cores).
        finished = {"wall_s": wall, "load_avg": [round(x, 2) for x in os.getloadavg()], **key}
        done.write_text(json.dumps(finished) + "\n")
        finished_runs.append(finished)
    return finished_runs


def score_run(panel: Panel, out: Path) -> dict:
    """The panel's figures of the run's export (and of its last generator when it kept a best one)."""
    checkpoints = sorted((out / "checkpoints").iterdir())
    state = json.loads((checkpoints[-1] / "trainer_state.json").read_text())
    best = out / "best_generator"
    exported = best if best.is_dir() else out / "generator"
    record = {
        "updates": state["state"]["step"],
        "exported": exported.name,
        "panel": panel.score_generator(load_quietly(exported)),
    }
    if best.is_dir():
        record["last_panel"] = panel.score_generator(load_quietly(out / "generator"))
    return record


def last_grid(out: Path) -> Optional[Path]:
    grids = sorted((out / "samples").glob("step_*.png"))
    return grids[-1] if grids else None


def save_grids(
    cells: Dict[Tuple[str, int], Optional[Path]], settings: Sequence[str], seeds: Sequence[int], path: Path
) -> Path:
    """The last grid of every run side by side: a row per setting, a column per seed, labelled."""
    from PIL import Image, ImageDraw

    images = {key: Image.open(p).convert("RGB") for key, p in cells.items() if p is not None}
    side = max((max(im.size) for im in images.values()), default=64)
    label = 16
    sheet = Image.new("RGB", (len(seeds) * (side + 8), len(settings) * (side + label + 8)), "white")
    draw = ImageDraw.Draw(sheet)
    for row, setting in enumerate(settings):
        for col, seed in enumerate(seeds):
            x, y = col * (side + 8), row * (side + label + 8)
            draw.text((x + 2, y + 2), f"{setting}, seed {seed}", fill="black")
            if (setting, seed) in images:
                sheet.paste(images[(setting, seed)], (x, y + label))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.photos panel",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--workdir", required=True, help="Crops, runs, the panel's caches and records go here.")
    parser.add_argument(
        "--folder",
        choices=FOLDERS,
        default="photos",
        help="The photo crops or a second folder of real images (benchmarks/photos/folders.py).",
    )
    parser.add_argument("--minutes", type=float, default=15.0, help="--time_budget of every run, in minutes.")
    parser.add_argument("--seeds", type=int, default=3, help="Seeds per setting (the verdict needs 3).")
    parser.add_argument("--first_seed", type=int, default=0, help="Seeds run from here.")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=FLAGS",
        help="A setting: the default command plus FLAGS, environment variables first ('one=OMP_NUM_THREADS=1'); "
        "the first is the baseline (repeatable, 2 or more).",
    )
    parser.add_argument(
        "--layout",
        choices=("pairs", "alternate"),
        default="pairs",
        help="Two runs at once at one thread each, or one at a time.",
    )
    parser.add_argument(
        "--keep_checkpoints",
        type=int,
        default=0,
        help="Steps between kept checkpoints, for `along` (0: the run's own).",
    )
    parser.add_argument("--record", help="Also write benchmarks/results/RECORD.json.")
    parser.add_argument("--machine", default="", help="What the record says about the machine and its load.")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if missing(args.folder):
        parser.error(f"--folder {args.folder}: {missing(args.folder)}")
    try:
        settings = [parse_setting(spec) for spec in args.setting]
    except ValueError as err:
        parser.error(str(err))
    names = [s.name for s in settings]
    if len(settings) < 2 or len(set(names)) != len(names):
        parser.error("--setting: pass 2 or more, with distinct names (the first is the baseline)")
    from benchmarks.photos.equal_time import RUNS

    if set(names) & set(RUNS):
        parser.error(f"--setting: names other than {', '.join(RUNS)} (benchmarks/photos/equal_time.py's runs)")
    if args.seeds < 1 or args.minutes <= 0 or args.keep_checkpoints < 0:
        parser.error("--seeds must be 1 or more, --minutes above 0, --keep_checkpoints 0 or more")
    return run(args, settings)


def run(args: argparse.Namespace, settings: List[Setting], panel_settings: Optional[PanelSettings] = None) -> int:
    workdir = Path(args.workdir)
    panel = Panel(workdir, args.folder, panel_settings or PanelSettings())
    print(f"panel on {args.folder}: floors {json.dumps(panel.describe()['floors'])}", flush=True)
    results = workdir / f"panel_{args.folder}.json"
    records = json.loads(results.read_text()) if results.is_file() else []
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    grids = {}
    for group in schedule(settings, seeds, args.layout):
        outs = [workdir / "runs" / args.folder / f"{s.name}_seed{seed}_{args.minutes:g}m" for s, seed in group]
        jobs = [
            (
                train_argv(s, panel.data["train"], out, args.minutes, seed, workdir / "cache", args.keep_checkpoints),
                run_env(s, args.layout),
                out,
            )
            for (s, seed), out in zip(group, outs)
        ]
        finished_runs = run_group(jobs)
        for (s, seed), out, finished in zip(group, outs, finished_runs):
            grids[(s.name, seed)] = last_grid(out)
            key = (s.name, seed, args.minutes, s.flags, s.env, args.layout)
            same = [
                r for r in records if (r["setting"], r["seed"], r["minutes"], r["flags"], r["env"], r["layout"]) == key
            ]
            if any(r.get("version") == PANEL_VERSION for r in same):
                continue
            # A record of another panel version is scored again from its run's folder, which stays.
            records = [r for r in records if r not in same]
            record = {
                "version": PANEL_VERSION,
                "setting": s.name,
                "seed": seed,
                "minutes": args.minutes,
                "flags": s.flags,
                "env": s.env,
                "layout": args.layout,
                "wall_s": finished["wall_s"],
            }
            if "load_avg" in finished:  # runs finished before the load was kept have none
                record["load_avg"] = finished["load_avg"]
            record.update(score_run(panel, out))
            records.append(record)
            results.write_text(json.dumps(records, indent=2) + "\n")
    names = [s.name for s in settings]
    mine = [
        r
        for r in records
        if r["setting"] in names
        and r["minutes"] == args.minutes
        and r["layout"] == args.layout
        and r.get("version") == PANEL_VERSION
    ]
    verdicts = [verdict(mine, names[0], name) for name in names[1:]]
    print("\n" + table(mine, names) + "\n")
    print(draw_noise_line(mine))
    for v in verdicts:
        print(verdict_line(v))
    sheet = save_grids(grids, names, seeds, workdir / f"panel_{args.folder}_grids.png")
    print(f"grids side by side: {sheet}")
    if args.record:
        record = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": args.machine,
            "cpu": machine(),
            "command": "python -m benchmarks.photos panel " + " ".join(shlex.quote(a) for a in args.argv),
            "panel": panel.describe(),
            "records": mine,
            "verdicts": verdicts,
        }
        (RESULTS / f"{args.record}.json").write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
