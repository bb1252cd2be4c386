"""Validation: accuracy, macro F1 and loss over the whole validation set, and the best model's export."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict

import torch
import torch.nn.functional as F

from ..metrics import classification_metrics
from .model import export_model


@torch.no_grad()
def evaluate(accelerator, model, eval_dl, num_labels: int) -> Dict[str, float]:
    """``eval/{accuracy,f1_macro,loss,samples}`` on every rank (same numbers everywhere).

    ``gather_for_metrics`` runs inside the loop, on per-sample tensors: that is where Accelerate
    drops the samples it duplicated to even out the last batch across processes, so ``samples``
    equals the validation size for any number of processes.
    """
    model.eval()
    preds, labels, losses = [], [], []
    for batch in eval_dl:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        logits = model(**inputs).logits.float()                                   # [B, num_labels]
        loss = F.cross_entropy(logits, batch["labels"], reduction="none")         # [B]
        p, y, l = accelerator.gather_for_metrics((logits.argmax(dim=-1), batch["labels"], loss))
        preds.append(p.cpu()), labels.append(y.cpu()), losses.append(l.cpu())
    model.train()
    preds, labels, losses = torch.cat(preds), torch.cat(labels), torch.cat(losses)
    scores = classification_metrics(preds, labels, num_labels)
    return {"eval/accuracy": scores["accuracy"], "eval/f1_macro": scores["f1_macro"],
            "eval/loss": float(losses.mean()), "eval/samples": float(labels.numel())}


def export_best(accelerator, model, tokenizer, out: Path, state, metrics: Dict[str, float]) -> None:
    """Export the new best model to ``out`` with its metrics beside it (``eval_results.json``);
    every rank calls this and waits for the main process's write."""
    if accelerator.is_main_process:
        export_model(accelerator.unwrap_model(model), tokenizer, out)
        record = {"step": state.step, "epoch": state.epoch, **metrics}
        (out / "eval_results.json").write_text(json.dumps(record, indent=2) + "\n")
    accelerator.wait_for_everyone()
