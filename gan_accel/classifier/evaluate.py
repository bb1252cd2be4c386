"""Validation: accuracy, macro F1 and loss over the whole validation set, and the best-model keeper."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict

import torch
import torch.nn.functional as F

from ..metrics import classification_metrics
from .model import export_model


@torch.no_grad()
def gather_predictions(accelerator, model, eval_dl):
    """``(predictions, labels, per-sample losses)`` over the whole validation set, in its order,
    on every rank (CPU tensors).

    ``gather_for_metrics`` runs inside the loop, on per-sample tensors: that is where Accelerate
    drops the samples it duplicated to even out the last batch across processes, so there are
    exactly as many as validation examples for any number of processes.
    """
    was_training = model.training
    model.eval()
    preds, labels, losses = [], [], []
    for batch in eval_dl:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        logits = model(**inputs).logits.float()                                   # [B, num_labels]
        loss = F.cross_entropy(logits, batch["labels"], reduction="none")         # [B]
        p, y, l = accelerator.gather_for_metrics((logits.argmax(dim=-1), batch["labels"], loss))
        preds.append(p.cpu()), labels.append(y.cpu()), losses.append(l.cpu())
    model.train(was_training)
    return torch.cat(preds), torch.cat(labels), torch.cat(losses)


def evaluate(accelerator, model, eval_dl, num_labels: int) -> Dict[str, float]:
    """``eval/{accuracy,f1_macro,loss,samples}`` on every rank (same numbers everywhere); ``samples``
    equals the validation size for any number of processes (see :func:`gather_predictions`)."""
    return scores_of(*gather_predictions(accelerator, model, eval_dl), num_labels)


def scores_of(preds: torch.Tensor, labels: torch.Tensor, losses: torch.Tensor, num_labels: int) -> Dict[str, float]:
    scores = classification_metrics(preds, labels, num_labels)
    return {"eval/accuracy": scores["accuracy"], "eval/f1_macro": scores["f1_macro"],
            "eval/loss": float(losses.mean()), "eval/samples": float(labels.numel())}


class BestModelKeeper:
    """Exports the model to ``OUTPUT_DIR/model`` whenever ``--metric_for_best_model`` improves.

    The best value lives in ``TrainState.best_metric`` (so it survives a resume); the metrics of
    the exported model are written next to it as ``eval_results.json``.
    """

    def __init__(self, accelerator, state, out: Path, tokenizer, metric: str, greater_is_better: bool) -> None:
        self.accelerator, self.state, self.out, self.tokenizer = accelerator, state, Path(out), tokenizer
        self.key, self.greater_is_better = f"eval/{metric}", greater_is_better

    def improved(self, value: float) -> bool:
        best = self.state.best_metric
        if best is None or math.isnan(best):
            return True
        return value > best if self.greater_is_better else value < best

    def update(self, model, metrics: Dict[str, float], epoch: int) -> bool:
        value = metrics[self.key]
        if not self.improved(value):
            return False
        self.state.best_metric = value
        if self.accelerator.is_main_process:
            export_model(self.accelerator.unwrap_model(model), self.tokenizer, self.out)
            record = {"step": self.state.step, "epoch": epoch, **metrics}
            (self.out / "eval_results.json").write_text(json.dumps(record, indent=2) + "\n")
        self.accelerator.wait_for_everyone()
        return True

    def best_record(self) -> dict:
        path = self.out / "eval_results.json"
        return json.loads(path.read_text()) if path.is_file() else {}
