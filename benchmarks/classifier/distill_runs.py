"""Distillation benchmark on the stdlib docstring corpus (offline, 4 classes, real text):

1. a teacher: the tiny DistilBERT (``--teacher_layers`` layers) fine-tuned by the classifier path;
2. a student with half its layers (DistilBERT's initialisation from the teacher), distilled;
3. the same student, same initialisation, data and budget, trained on the labels alone
   (``--alpha_kd 0 --alpha_ce 1``): the ablation that shows what the teacher's soft targets buy;
4. the distilled student again with ``--cache_teacher_logits`` (the same accuracy), and the
   speed-up of skipping the teacher's forward: the ratio of training-loop wall times of short runs
   with and without the cache, in interleaved pairs in this one run (evaluations included: the
   same in both).

Every run is a real run of the scripts' library functions (run folders under ``--output_dir``).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks.common import ratios, reset_accelerate, set_threads, summary


@dataclass
class DistillBenchArguments:
    output_dir: str = field(
        default="runs/bench_distill", metadata={"help": "Folder for the corpus, the tiny model and every run."}
    )
    output_json: str = field(default="bench_distill.json", metadata={"help": "Where to write the figures (JSON)."})
    per_class: int = field(
        default=700, metadata={"help": "Docstrings per class (4 classes; a fifth of them go to validation)."}
    )
    vocab_size: int = field(default=3000, metadata={"help": "WordPiece vocabulary of the tiny model."})
    dim: int = field(default=64, metadata={"help": "Hidden size of teacher and student."})
    teacher_layers: int = field(
        default=4, metadata={"help": "Transformer layers of the teacher (the student gets half)."}
    )
    max_length: int = field(default=64, metadata={"help": "Tokens per docstring."})
    batch_size: int = field(default=32, metadata={"help": "Examples per batch (teacher and students)."})
    learning_rate: float = field(
        default=1e-3, metadata={"help": "Peak LR (a randomly initialised tiny model needs a large one)."}
    )
    teacher_epochs: int = field(default=5, metadata={"help": "Fine-tuning epochs of the teacher."})
    student_epochs: int = field(default=5, metadata={"help": "Epochs of every student (the same budget for each)."})
    alpha_kd: float = field(default=0.5, metadata={"help": "Soft-target weight of the distilled student."})
    alpha_ce: float = field(default=0.5, metadata={"help": "Label weight of the distilled student."})
    temperature: float = field(default=2.0, metadata={"help": "Distillation temperature."})
    student_seeds: str = field(
        default="0,1,2",
        metadata={
            "help": "Comma-separated seeds of the distilled and labels-only students (data order and dropout; the initialisation is the teacher's either way)."
        },
    )
    speed_reps: int = field(
        default=3,
        metadata={
            "help": "Interleaved (teacher forward, cached logits) pairs of short runs timed for the cache's speed-up."
        },
    )
    speed_steps: int = field(default=100, metadata={"help": "Updates of each timed run."})
    threads: int = field(default=1, metadata={"help": "Intra-op threads of every run (the same for all)."})
    seed: int = field(default=0, metadata={"help": "Seed of the tiny model and every run."})


def _run_args(args: DistillBenchArguments, name: str, seed: Optional[int] = None):
    from gan_accel.config import RunArguments

    return RunArguments(
        output_dir=str(Path(args.output_dir) / name),
        overwrite_output_dir=True,
        seed=args.seed if seed is None else seed,
        checkpointing_steps=0,
        log_every=50,
    )


def _train_args(args: DistillBenchArguments, epochs: int):
    from gan_accel.classifier.config import ClassifierTrainArguments

    return ClassifierTrainArguments(
        optimizer="adamw",
        learning_rate=args.learning_rate,
        weight_decay=0.01,
        num_train_epochs=epochs,
        batch_size=args.batch_size,
    )


def train_teacher(args: DistillBenchArguments, data_args) -> Path:
    from gan_accel.classifier.config import ClassifierModelArguments
    from gan_accel.classifier.tiny import TinyModelArguments, make_tiny_model
    from gan_accel.classifier.train import train_classifier

    tiny = make_tiny_model(
        TinyModelArguments(
            train_file=data_args.train_file,
            output_dir=str(Path(args.output_dir) / "tiny"),
            vocab_size=args.vocab_size,
            dim=args.dim,
            n_layers=args.teacher_layers,
            n_heads=4,
            max_position_embeddings=128,
            seed=args.seed,
        )
    )
    reset_accelerate()
    out = train_classifier(
        data_args,
        ClassifierModelArguments(model_name_or_path=str(tiny)),
        _train_args(args, args.teacher_epochs),
        _run_args(args, "teacher"),
    )
    return out / "model"


def distill(
    args: DistillBenchArguments,
    data_args,
    teacher: Path,
    name: str,
    seed: int,
    max_steps: Optional[int] = None,
    **loss,
) -> dict:
    from gan_accel.classifier.distill import DistillArguments, DistillModelArguments
    from gan_accel.classifier.distill.train import train_distill

    reset_accelerate()
    model_args = DistillModelArguments(
        teacher_model_name_or_path=str(teacher), student_from_teacher=True, student_layers=args.teacher_layers // 2
    )
    loss = {"alpha_kd": args.alpha_kd, "alpha_ce": args.alpha_ce, "temperature": args.temperature, **loss}
    train_args = _train_args(args, args.student_epochs)
    train_args.max_steps = max_steps
    run = train_distill(data_args, model_args, DistillArguments(**loss), train_args, _run_args(args, name, seed))
    return json.loads((run.output_dir / "eval_results.json").read_text())


def row(results: dict, who: str = "student") -> Dict[str, float]:
    scores = results["teacher"] if who == "teacher" else results["student"]["final"]
    out = {
        "accuracy": scores["eval/accuracy"],
        "f1_macro": scores["eval/f1_macro"],
        "parameters": results["parameters"][who],
    }
    if who == "student":
        out.update(
            agreement=scores["eval/agreement"],
            train_seconds=results["train_seconds"],
            best_accuracy=results["student"]["best"]["eval/accuracy"],
        )
    return out


def over_seeds(rows: List[dict]) -> dict:
    """Mean of each figure over the seeds, and every seed's row."""
    keys = ("accuracy", "f1_macro", "agreement", "best_accuracy")
    return {
        **{k: sum(r[k] for r in rows) / len(rows) for k in keys},
        "parameters": rows[0]["parameters"],
        "min_accuracy": min(r["accuracy"] for r in rows),
        "max_accuracy": max(r["accuracy"] for r in rows),
        "seeds": rows,
    }


def cache_speedup(args: DistillBenchArguments, data_args, teacher: Path, seed: int) -> dict:
    """Training-loop wall time with the teacher's forward over that with cached logits, in pairs run
    back to back (a shared machine's load then mostly cancels in each pair's ratio); the cache
    pass itself is timed apart."""
    live, cached, cache_pass = [], [], []
    for rep in range(args.speed_reps):
        live.append(distill(args, data_args, teacher, f"speed_live_{rep}", seed, args.speed_steps)["train_seconds"])
        r = distill(args, data_args, teacher, f"speed_cached_{rep}", seed, args.speed_steps, cache_teacher_logits=True)
        cached.append(r["train_seconds"])
        cache_pass.append(r["teacher_cache_seconds"])
    loop = summary(ratios(live, cached))
    total = summary(ratios(live, [c + p for c, p in zip(cached, cache_pass)]))
    return {
        "train_loop": loop["median"],
        "train_loop_summary": loop,
        "including_cache_pass": total["median"],
        "cache_pass_seconds": statistics.median(cache_pass),
        "live_seconds": live,
        "cached_seconds": cached,
        "steps": args.speed_steps,
    }


def run_bench(args: DistillBenchArguments) -> dict:
    from benchmarks.corpora.stdlib import make_corpus
    from gan_accel.classifier.config import ClassifierDataArguments

    set_threads(args.threads)
    corpus = make_corpus(Path(args.output_dir) / "data", per_class=args.per_class, seed=args.seed)
    data_args = ClassifierDataArguments(
        train_file=str(corpus["train"]), validation_file=str(corpus["validation"]), max_length=args.max_length
    )
    teacher = train_teacher(args, data_args)
    seeds = [int(s) for s in args.student_seeds.split(",")]
    distilled = [distill(args, data_args, teacher, f"student_kd_seed{s}", s) for s in seeds]
    cached = distill(
        args, data_args, teacher, f"student_kd_cached_seed{seeds[0]}", seeds[0], cache_teacher_logits=True
    )
    labels_only = [
        distill(args, data_args, teacher, f"student_labels_only_seed{s}", s, alpha_kd=0.0, alpha_ce=1.0) for s in seeds
    ]
    return {
        "corpus": corpus["counts"],
        "teacher": row(distilled[0], "teacher"),
        "student_distilled": over_seeds([row(r) for r in distilled]),
        "student_labels_only": over_seeds([row(r) for r in labels_only]),
        "student_distilled_cached": over_seeds([row(cached)]),
        "cache_speedup": cache_speedup(args, data_args, teacher, seeds[0]),
        "settings": dict(vars(args)),
    }


def format_report(r: dict) -> str:
    lines = [
        "| model | layers | parameters | accuracy (final, mean) | min-max over seeds | macro F1 | agreement with teacher | best accuracy during the run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    layers = r["settings"]["teacher_layers"]
    t = r["teacher"]
    lines.append(
        f"| teacher (fine-tuned on labels) | {layers} | {t['parameters']:,} | {t['accuracy']:.3f} | - | "
        f"{t['f1_macro']:.3f} | - | - |"
    )
    named = [
        ("student, distilled", "student_distilled"),
        ("student, labels only (same init, data, budget)", "student_labels_only"),
        ("student, distilled with --cache_teacher_logits", "student_distilled_cached"),
    ]
    for label, key in named:
        x = r[key]
        lines.append(
            f"| {label} | {layers // 2} | {x['parameters']:,} | {x['accuracy']:.3f} | "
            f"{x['min_accuracy']:.3f}-{x['max_accuracy']:.3f} ({len(x['seeds'])}) | {x['f1_macro']:.3f} | "
            f"{x['agreement']:.3f} | {x['best_accuracy']:.3f} |"
        )
    s = r["cache_speedup"]
    spread = s["train_loop_summary"]
    lines.append(
        f"\n--cache_teacher_logits: training loop {s['train_loop']:.2f}x faster (median of "
        f"{len(spread['values'])} pairs of {s['steps']}-update runs, min {spread['min']:.2f}, max {spread['max']:.2f}); "
        f"{s['including_cache_pass']:.2f}x counting the {s['cache_pass_seconds']:.1f} s cache pass"
    )
    return "\n".join(lines)
