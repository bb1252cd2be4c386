"""The image-data benchmark behind ``python -m benchmarks.data``: in memory vs streamed from the
decode cache, on a generated folder of JPEGs.

Each measurement runs the real trainer (:class:`GANTrainer`, as ``train_gan.py`` builds it) in a
fresh Python process, so its peak RSS is its own and a "second run" really starts from nothing
but the files on disk. A child reports: seconds from its start to the end of the first G update
(imports, data, models, one step), images/s over the timed updates, and the peak RSS of the
training process and of its DataLoader workers.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Dict, List

import numpy as np

CLASSES = 10


def _write_chunk(job) -> int:
    from PIL import Image

    root, start, stop, size, seed = job
    rng = np.random.default_rng(seed + start)
    for i in range(start, stop):
        # Smooth colour fields (a 4x4 random image upscaled) plus noise: JPEGs of a realistic size.
        low = rng.integers(0, 255, (4, 4, 3), dtype=np.uint8)
        img = np.asarray(Image.fromarray(low).resize((size, size), Image.BILINEAR), dtype=np.int16)
        img = np.clip(img + rng.integers(-20, 20, img.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(Path(root) / f"c{i % CLASSES}" / f"{i:07d}.jpg", quality=90)
    return stop - start


def generate_folder(root: Path, num_images: int, size: int, processes: int, seed: int = 0) -> Path:
    """``num_images`` JPEGs of ``size`` px in ``CLASSES`` class folders, written by a process pool
    (kept when a previous run with the same ``--work_dir`` already wrote them all)."""
    if root.is_dir() and sum(1 for _ in root.glob("c*/*.jpg")) == num_images:
        return root
    for c in range(CLASSES):
        (root / f"c{c}").mkdir(parents=True, exist_ok=True)
    step = 2000
    jobs = [(str(root), s, min(s + step, num_images), size, seed) for s in range(0, num_images, step)]
    with Pool(processes) as pool:
        assert sum(pool.map(_write_chunk, jobs)) == num_images
    return root


def child_argv(data_dir: Path, cache_dir: str, in_memory: str, args) -> List[str]:
    return [
        "--dataset",
        "folder",
        "--data_dir",
        str(data_dir),
        "--image_size",
        str(args.image_size),
        "--channels",
        "3",
        "--data_in_memory",
        in_memory,
        "--data_cache_dir",
        cache_dir,
        "--dataloader_num_workers",
        str(args.workers),
        "--batch_size",
        str(args.batch_size),
        "--g_channels",
        str(args.channels),
        "--d_channels",
        str(args.channels),
        "--z_dim",
        "64",
        "--sample_every",
        "0",
        "--checkpointing_steps",
        "0",
        "--log_every",
        "1000000",
        "--max_steps",
        "1000000",
        "--cpu",
        "--overwrite_output_dir",
    ]


def measure(argv: List[str], out_dir: Path, threads: int, warmup: int, steps: int) -> Dict[str, float]:
    """Run :func:`child` in a fresh interpreter and return its figures."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    code = "import sys, json; from benchmarks.data.paths import child; child(json.loads(sys.argv[1]))"
    spec = {
        "argv": [*argv, "--output_dir", str(out_dir)],
        "threads": threads,
        "warmup": warmup,
        "steps": steps,
        "t_start": time.time(),
    }
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(spec: dict) -> None:
    """In the child process: build the trainer, one update, ``warmup`` more, ``steps`` timed."""
    import contextlib
    import gc

    import torch

    torch.set_num_threads(spec["threads"])
    from gan_accel.config import RunArguments, parse_config
    from gan_accel.gan.config import GAN_CONFIG_TYPES
    from gan_accel.gan.trainer import GANTrainer

    with contextlib.redirect_stdout(sys.stderr):
        data, model, train, evaluation, run = parse_config((*GAN_CONFIG_TYPES, RunArguments), spec["argv"])
        trainer = GANTrainer(data, model, train, run, evaluation)
        engine = trainer.engine
        # The engine's loop advanced in chunks (it continues from its own state, as a resume
        # would); no end-of-chunk files: the chunk's "end" would write a checkpoint and a grid.
        engine.save_checkpoint = trainer.save_samples = lambda: None
        engine.logger = trainer.run.make_logger(10**9, unit="img", desc="bench")
        engine.max_steps = 1
        engine.train_loop()
        first_step = time.time() - spec["t_start"]
        engine.max_steps += spec["warmup"]
        engine.train_loop()
        t0 = time.perf_counter()
        engine.max_steps += spec["steps"]
        engine.train_loop()
        seconds = time.perf_counter() - t0
        in_memory = trainer.data.in_memory
        trainer.run.logger.close()
        del trainer
        gc.collect()  # shuts persistent DataLoader workers down, so their peak RSS is counted below
    kb = 1024 if sys.platform != "darwin" else 1
    print(
        json.dumps(
            {
                "in_memory": in_memory,
                "seconds_to_first_step": first_step,
                "img_per_s": spec["steps"] * train.batch_size / seconds,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * kb / 2**20,
                "peak_rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * kb / 2**20,
            }
        )
    )


def run_data_bench(args, print_fn=print) -> dict:
    """Generate the folders, then measure: first and second run (streamed and in memory), the
    in-memory path without a cache (decoded in this run, as before the cache existed), and the
    peak RSS of both modes at two dataset sizes."""
    import shutil
    import tempfile

    from benchmarks.common import ratios, summary

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="bench_data_"))
    big, small = work / f"images_{args.num_images}", work / f"images_{args.small_num_images}"
    cache = str(work / "cache")
    t0 = time.perf_counter()
    generate_folder(big, args.num_images, args.image_size, args.processes, seed=0)
    generate_folder(small, args.small_num_images, args.image_size, args.processes, seed=1)
    print_fn(
        f"generated {args.num_images} + {args.small_num_images} JPEGs of {args.image_size} px in "
        f"{time.perf_counter() - t0:.1f} s ({args.processes} processes) under {work}"
    )

    def run(name, folder, cache_dir, mode, steps=args.steps):
        figures = measure(
            child_argv(folder, cache_dir, mode, args), work / "runs" / name, args.threads, args.warmup, steps
        )
        print_fn(
            f"{name:34s} "
            + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())
        )
        return figures

    out: Dict[str, object] = {"config": {k: v for k, v in vars(args).items()}}
    out["stream_first_run"] = run("stream, first run (builds cache)", big, cache, "no")
    out["stream_second_run"] = run("stream, second run", big, cache, "no")
    out["memory_second_run"] = run("in memory, from the cache", big, cache, "yes")
    out["memory_no_cache"] = run("in memory, no cache (decode)", big, "none", "yes", steps=2)
    speed_mem, speed_stream = [], []
    for rep in range(args.reps):  # interleaved, so machine noise hits both modes alike
        speed_mem.append(run(f"in memory, throughput #{rep + 1}", big, cache, "yes")["img_per_s"])
        speed_stream.append(run(f"stream, throughput #{rep + 1}", big, cache, "no")["img_per_s"])
    out["img_per_s"] = {
        "in_memory": summary(speed_mem),
        "stream": summary(speed_stream),
        "stream_over_memory": summary(ratios(speed_stream, speed_mem)),
    }
    run("stream, small, first run", small, cache, "no", steps=2)
    out["rss_mb"] = {}
    for label, folder in ((args.small_num_images, small), (args.num_images, big)):
        for mode, flag in (("in_memory", "yes"), ("stream", "no")):
            fig = run(f"{mode}, {label} images (RSS)", folder, cache, flag, steps=args.rss_steps)
            out["rss_mb"][f"{mode}_{label}"] = {"main": fig["peak_rss_mb"], "workers": fig["peak_rss_children_mb"]}
    if not args.keep_data and not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    return out


def report(out: dict) -> str:
    cfg, rss, speed = out["config"], out["rss_mb"], out["img_per_s"]
    n, m = cfg["num_images"], cfg["small_num_images"]
    rows = [
        (
            "time to first step, streamed, first run (decode cache built)",
            f"{out['stream_first_run']['seconds_to_first_step']:.1f} s",
        ),
        (
            "time to first step, streamed, second run (cache opened)",
            f"{out['stream_second_run']['seconds_to_first_step']:.1f} s",
        ),
        (
            "time to first step, in memory, second run (read from the cache)",
            f"{out['memory_second_run']['seconds_to_first_step']:.1f} s",
        ),
        (
            "time to first step, in memory, no cache (decoded in the run)",
            f"{out['memory_no_cache']['seconds_to_first_step']:.1f} s",
        ),
        (
            f"peak RSS in memory, {m:,} / {n:,} images",
            f"{rss[f'in_memory_{m}']['main']:.0f} / {rss[f'in_memory_{n}']['main']:.0f} MB",
        ),
        (
            f"peak RSS streamed, {m:,} / {n:,} images (trainer)",
            f"{rss[f'stream_{m}']['main']:.0f} / {rss[f'stream_{n}']['main']:.0f} MB",
        ),
        (
            f"peak RSS streamed, {m:,} / {n:,} images (each worker)",
            f"{rss[f'stream_{m}']['workers']:.0f} / {rss[f'stream_{n}']['workers']:.0f} MB",
        ),
        (
            "img/s in memory / streamed (median)",
            f"{speed['in_memory']['median']:.0f} / {speed['stream']['median']:.0f}",
        ),
        (
            "streamed img/s as a ratio of in memory (median, min-max)",
            f"{speed['stream_over_memory']['median']:.2f} ({speed['stream_over_memory']['min']:.2f}-{speed['stream_over_memory']['max']:.2f})",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"| {a:{width}s} | {b} |" for a, b in rows)
