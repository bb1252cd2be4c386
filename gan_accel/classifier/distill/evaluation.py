"""Evaluation of a distillation run: the teacher once, the student at every evaluation, how often
they agree, the best student kept in ``OUTPUT_DIR/model``, and ``eval_results.json``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict

from ...engine import BestKeeper
from ...loop.atomic import write_text_atomic
from ...loop.guard import all_finite
from ..evaluate import confusion_matrix, export_best, gather_predictions, scores_of
from .student import parameter_count


class DistillEvaluator:
    """Called by the engine's cadence hook (every ``--eval_every``, each epoch end, the last step).

    The teacher never changes, so its predictions on the validation set are computed once; the
    student's are compared with them (``eval/agreement``: the share of validation examples on
    which both predict the same class).
    """

    def __init__(self, engine, tokenizer, eval_loader, num_labels: int, metric: str, greater_is_better: bool) -> None:
        self.engine = engine
        self.run = engine.run
        self.acc = engine.accelerator
        self.tokenizer = tokenizer
        self.eval_loader = eval_loader
        self.num_labels = num_labels
        self.model_dir = self.run.output_dir / "model"
        teacher_preds, labels, losses = gather_predictions(self.acc, engine.nets.teacher, eval_loader)
        self.teacher_preds = teacher_preds
        self.teacher_metrics = scores_of(teacher_preds, labels, losses, num_labels)
        self.keeper = BestKeeper(self.run.state, f"eval/{metric}", greater_is_better, self.export)
        self.last: Dict[str, float] = {}
        self.last_step = -1

    def __call__(self) -> None:
        preds, labels, losses = gather_predictions(self.acc, self.engine.nets.student, self.eval_loader)
        metrics = {
            **scores_of(preds, labels, losses, self.num_labels),
            "eval/agreement": float((preds == self.teacher_preds).float().mean()),
        }
        step = self.run.state.step
        self.last = metrics
        self.last_step = step
        self.last_confusion = confusion_matrix(preds, labels, self.num_labels)
        kept = self.keep(metrics)
        self.engine.logger.write(step, metrics)
        self.run.print(
            f"step {step}: accuracy {metrics['eval/accuracy']:.4f} (teacher "
            f"{self.teacher_metrics['eval/accuracy']:.4f})  f1_macro {metrics['eval/f1_macro']:.4f}  "
            f"agreement {metrics['eval/agreement']:.4f}  samples {int(metrics['eval/samples'])}"
            + ("  (best so far: saved)" if kept else "")
        )

    def export(self, metrics: Dict[str, float]) -> None:
        """The best student so far: ``save_pretrained`` model + the tokenizer, written atomically."""
        export_best(self.acc, self.engine.nets.student, self.tokenizer, self.model_dir, self.run.state, metrics)

    def keep(self, metrics: Dict[str, float]) -> bool:
        """Export when the metric improves, and only a sound model: a diverged student's NaN logits
        still give a finite accuracy (argmax picks a class) with a NaN loss, so every metric and
        every weight must be finite (the same DDP weights on every rank: the same decision)."""
        if not all(math.isfinite(v) for v in metrics.values()):
            return False
        if not bool(all_finite(self.engine.nets.student.parameters())):
            return False
        return self.keeper.update(metrics)

    def best_record(self) -> dict:
        path = self.model_dir / "eval_results.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def write_results(self, extra: dict) -> dict:
        """``OUTPUT_DIR/eval_results.json``: student (final and best), teacher, parameter counts."""
        results = {
            "student": {"final": {"step": self.last_step, **self.last}, "best": self.best_record()},
            "teacher": self.teacher_metrics,
            "parameters": {
                "student": parameter_count(self.engine.module("student")),
                "teacher": parameter_count(self.engine.module("teacher")),
            },
            "steps": self.run.state.step,
            "confusion": getattr(self, "last_confusion", None),  # the student's [true][predicted], final evaluation
            "final_lr": self.engine.schedulers["student"].get_last_lr()[0],
            **extra,
        }
        if self.acc.is_main_process:
            write_text_atomic(
                Path(self.run.output_dir) / "eval_results.json", json.dumps(results, indent=2) + "\n", "results"
            )
        return results
