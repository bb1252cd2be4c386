"""The course's efficient-training knobs, measured on the classifier path: each variant is one
``scripts/train_classifier.py`` run in its own process (its own peak memory; torchrun for the
multi-process ones) on the same corpus and DistilBERT-style model, 1 epoch.

Reported per variant: training samples/s (median of the logged ``throughput/sample_per_s``),
wall seconds of the whole process, the training process's peak resident memory (the logged
``memory/peak_mb``; per process for the multi-process variants),
and the final accuracy. Ratios are against the baseline of the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[2]

# name -> (extra flags, processes). Global batch 32 everywhere, so every variant makes the same updates.
VARIANTS: Dict[str, tuple] = {
    "baseline": ([], 1),
    "gradient_accumulation_4": (["--batch_size", "8", "--gradient_accumulation_steps", "4"], 1),
    "gradient_checkpointing": (["--gradient_checkpointing"], 1),
    "bf16": (["--mixed_precision", "bf16"], 1),
    "adamw": (["--optimizer", "adamw", "--weight_decay", "0.01"], 1),
    "adafactor": (["--optimizer", "adafactor"], 1),
    "2_processes": (["--batch_size", "16"], 2),
    "2_processes_local_sgd_8": (["--batch_size", "16", "--local_sgd_steps", "8"], 2),
}


@dataclass
class KnobSetup:
    n_train: int = 2000
    n_val: int = 200
    sentences_per_text: int = 4  # longer texts, so activations (what checkpointing saves) matter
    dim: int = 128
    n_layers: int = 4
    n_heads: int = 4
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 5e-4
    threads: int = 1


def make_inputs(setup: KnobSetup, folder: Path) -> Dict[str, Path]:
    import random

    from gan_accel.classifier.synthetic import make_rows, write_rows
    from gan_accel.classifier.tiny import TinyModelArguments, make_tiny_model

    folder.mkdir(parents=True, exist_ok=True)

    def long_rows(n: int, seed: int) -> list:
        # Several generated sentences per text; the label is the first one's (still learnable).
        rows, rng = make_rows(n * setup.sentences_per_text, seed), random.Random(seed)
        out = []
        for i in range(n):
            group = rows[i * setup.sentences_per_text : (i + 1) * setup.sentences_per_text]
            out.append({"text": " . ".join(r["text"] for r in group), "label": group[0]["label"]})
        rng.shuffle(out)
        return out

    train = write_rows(folder / "train.csv", long_rows(setup.n_train, 1))
    val = write_rows(folder / "validation.csv", long_rows(setup.n_val, 2))
    model = make_tiny_model(
        TinyModelArguments(
            train_file=str(train),
            output_dir=str(folder / "model"),
            vocab_size=500,
            dim=setup.dim,
            n_layers=setup.n_layers,
            n_heads=setup.n_heads,
            max_position_embeddings=setup.max_length,
        )
    )
    return {"train": train, "validation": val, "model": model}


def run_variant(name: str, setup: KnobSetup, inputs: Dict[str, Path], out: Path) -> dict:
    flags, processes = VARIANTS[name]
    argv = [
        "--train_file",
        str(inputs["train"]),
        "--validation_file",
        str(inputs["validation"]),
        "--model_name_or_path",
        str(inputs["model"]),
        "--output_dir",
        str(out),
        "--overwrite_output_dir",
        "--num_train_epochs",
        "1",
        "--batch_size",
        str(setup.batch_size),
        "--max_length",
        str(setup.max_length),
        "--learning_rate",
        str(setup.learning_rate),
        "--checkpointing_steps",
        "0",
        "--log_every",
        "5",
        *flags,
    ]
    script = str(ROOT / "scripts" / "train_classifier.py")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(setup.threads),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TQDM_DISABLE": "1",
    }
    if processes > 1:
        env["ACCELERATE_USE_CPU"] = "1"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
            script,
            *argv,
        ]
    else:
        cmd = [sys.executable, script, *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"variant {name} failed:\n{err[-2000:]}")
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    throughput = [r["throughput/sample_per_s"] for r in records if "throughput/sample_per_s" in r][1:]  # drop warm-up
    results = json.loads((out / "eval_results.json").read_text())
    # The main training process logs its own peak (memory/peak_mb); with torchrun the waited
    # process is the launcher, so the logged figure is the one that counts (per process).
    logged = [r["memory/peak_mb"] for r in records if "memory/peak_mb" in r]
    peak_mb = max(logged) if logged else usage.ru_maxrss / 1024
    return {
        "flags": " ".join(flags),
        "processes": processes,
        "wall_seconds": seconds,
        "samples_per_s": statistics.median(throughput) if throughput else float("nan"),
        "peak_rss_mb": peak_mb,
        "accuracy": results["final"].get("eval/accuracy"),
    }


def bench_knobs(setup: KnobSetup, folder: Path, names: List[str], log=print) -> dict:
    inputs = make_inputs(setup, folder)
    out = {}
    for name in names:
        out[name] = run_variant(name, setup, inputs, folder / f"run_{name}")
        log(
            f"  {name}: {out[name]['samples_per_s']:.1f} samples/s, peak {out[name]['peak_rss_mb']:.0f} MB, "
            f"acc {out[name]['accuracy']:.3f}"
        )
    base = out.get("baseline")
    if base:
        for res in out.values():
            res["speed_vs_baseline"] = res["samples_per_s"] / base["samples_per_s"]
            res["memory_vs_baseline"] = res["peak_rss_mb"] / base["peak_rss_mb"]
    return {"setup": setup.__dict__, "variants": out}
