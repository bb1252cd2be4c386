"""Validation: accuracy, macro F1 and loss over the whole validation set, and the best model's
keeping and export."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List

import torch
import torch.nn.functional as F

from ..engine import BestKeeper
from ..loop.atomic import write_text_atomic
from ..loop.guard import all_finite
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
    preds = []
    labels = []
    losses = []
    for batch in eval_dl:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        logits = model(**inputs).logits.float()  # [B, num_labels]
        loss = F.cross_entropy(logits, batch["labels"], reduction="none")  # [B]
        gathered = accelerator.gather_for_metrics((logits.argmax(dim=-1), batch["labels"], loss))
        for store, tensor in zip((preds, labels, losses), gathered):
            store.append(tensor.cpu())
    model.train(was_training)
    return torch.cat(preds), torch.cat(labels), torch.cat(losses)


def evaluate(accelerator, model, eval_dl, num_labels: int) -> Dict[str, float]:
    """``eval/{accuracy,f1_macro,loss,samples}`` on every rank (same numbers everywhere); ``samples``
    equals the validation size for any number of processes (see :func:`gather_predictions`)."""
    return scores_of(*gather_predictions(accelerator, model, eval_dl), num_labels)


def scores_of(preds: torch.Tensor, labels: torch.Tensor, losses: torch.Tensor, num_labels: int) -> Dict[str, float]:
    scores = classification_metrics(preds, labels, num_labels)
    return {
        "eval/accuracy": scores["accuracy"],
        "eval/f1_macro": scores["f1_macro"],
        "eval/loss": float(losses.mean()),
        "eval/samples": float(labels.numel()),
    }


def confusion_matrix(preds: torch.Tensor, labels: torch.Tensor, num_labels: int) -> List[List[int]]:
    """``[true][predicted]`` counts over the validation set (eval_results.json, report.html)."""
    flat = labels.long() * num_labels + preds.long()
    return torch.bincount(flat, minlength=num_labels * num_labels).view(num_labels, num_labels).tolist()


EXAMPLES = 8  # validation examples recorded in eval_results.json (report.html shows them)
TEXT_CHARS = 200  # a recorded text is cut to this many characters


def validation_examples(accelerator, model, dataset, collate, texts: List[str], label_names: List[str]) -> List[dict]:
    """The first :data:`EXAMPLES` validation examples in the file's order (the evaluation loader's
    runs longest first) with ``model``'s prediction and its probability: one small batch, on this
    process only (the unwrapped model: no collective), scored as ``gan-accel predict`` scores
    (:func:`.predict.top_labels`). ``collate`` is the evaluation loader's, so the texts are
    tokenised and padded as in evaluation; the device and autocast are the run's."""
    from .predict import top_labels

    count = min(EXAMPLES, len(dataset))
    batch = collate([dataset[i] for i in range(count)])
    labels = batch.pop("labels").tolist()
    net = accelerator.unwrap_model(model)
    was_training = net.training
    net.eval()
    with accelerator.autocast():
        ids, scores = top_labels(net, batch.to(accelerator.device))
    net.train(was_training)
    return [
        {
            "text": texts[i] if len(texts[i]) <= TEXT_CHARS else texts[i][: TEXT_CHARS - 1] + "\u2026",
            "label": label_names[labels[i]],
            # null for a diverged model's NaN (not JSON), and no class picked from it
            "predicted": label_names[ids[i]] if math.isfinite(scores[i]) else None,
            "probability": scores[i] if math.isfinite(scores[i]) else None,
        }
        for i in range(count)
    ]


def best_model_keeper(
    accelerator, state, model, tokenizer, out: Path, metric: str, greater_is_better: bool
) -> BestKeeper:
    """Exports ``model`` to ``out`` whenever ``--metric_for_best_model`` improves (the best value
    lives in ``TrainState.best_metric``, so it survives a resume).

    Every metric must be finite, not only the one that ranks: a diverged model's NaN logits still
    give a finite accuracy (argmax picks a class), with a NaN loss. The weights are checked too, on
    every rank (the same DDP weights, so the same decision everywhere)."""

    def acceptable(metrics: Dict[str, float]) -> bool:
        return all(math.isfinite(v) for v in metrics.values()) and bool(all_finite(model.parameters()))

    def export(metrics: Dict[str, float]) -> None:
        export_best(accelerator, model, tokenizer, Path(out), state, metrics)

    return BestKeeper(state, f"eval/{metric}", greater_is_better, export=export, accept=acceptable)


def export_best(accelerator, model, tokenizer, out: Path, state, metrics: Dict[str, float]) -> None:
    """Export the new best model to ``out`` with its metrics beside it (``eval_results.json``);
    every rank calls this and waits for the main process's write."""
    if accelerator.is_main_process:
        export_model(accelerator.unwrap_model(model), tokenizer, out)
        record = {"step": state.step, "epoch": state.epoch, **metrics}
        write_text_atomic(out / "eval_results.json", json.dumps(record, indent=2) + "\n", "results")
    accelerator.wait_for_everyone()


def best_record(out: Path) -> dict:
    """The metrics of the model exported to ``out`` ({} when none was)."""
    path = Path(out) / "eval_results.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def write_eval_results(trainer, out: Path) -> dict:
    """``OUT/eval_results.json`` of a finished classifier run (``trainer``: its task)."""
    results = {
        # null, not a bare NaN (which is not JSON), for a diverged evaluation
        "final": {
            "step": trainer.last_eval_step,
            **{k: v if math.isfinite(v) else None for k, v in trainer.last_eval.items()},
        },
        "best": best_record(out / "model"),
        "metric_for_best_model": trainer.args.metric_for_best_model,
        "label_names": trainer.data.label_names,
        "num_train_examples": len(trainer.data.train),
        "num_eval_examples": len(trainer.data.validation),
        "final_lr": trainer.engine.schedulers["model"].get_last_lr()[0],
        "steps": trainer.run.state.step,
        "confusion": getattr(trainer, "last_confusion", None),  # [true][predicted], the final evaluation
        "examples": trainer.validation_examples(trainer.engine.nets.model),
    }
    write_text_atomic(out / "eval_results.json", json.dumps(results, indent=2) + "\n", "results")
    return results
