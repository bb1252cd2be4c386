"""Distillation losses as small pure functions (Hinton et al. 2015; Sanh et al. 2019, DistilBERT).

Every function takes logits or hidden states and returns a 0-dim loss; :func:`distillation_loss`
weighs them with the ``--alpha_*`` flags and returns ``(loss, metrics)`` like every step of the
toolkit. Losses are computed in float32 whatever the autocast precision: a softmax at temperature
T of bf16 logits loses the small differences the student is meant to learn.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F


def soft_target_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """T^2 x KL(softmax(teacher / T) || softmax(student / T)), averaged over the batch.

    The T^2 keeps the gradient's size independent of T (the soft targets' gradients scale as
    1/T^2), so --alpha_kd and --alpha_ce stay comparable when T changes (Hinton et al. 2015).
    """
    s = F.log_softmax(student_logits.float() / temperature, dim=-1)  # [B, C]
    t = F.log_softmax(teacher_logits.float() / temperature, dim=-1)  # [B, C]
    kl = F.kl_div(s, t, reduction="batchmean", log_target=True)  # sum_c p_t (log p_t - log p_s) / B
    return kl * temperature**2


def hard_target_loss(student_logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy on the true labels, averaged over the batch."""
    return F.cross_entropy(student_logits.float(), labels)


def hidden_cosine_loss(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """Mean of 1 - cos(student_h, teacher_h) over the real (unpadded) tokens.

    DistilBERT's third loss: it aligns the directions of the last hidden states, token by token
    (``CosineEmbeddingLoss`` with target 1 on the masked-selected states). Needs equal widths.
    """
    mask = attention_mask.bool()  # [B, L]
    s = student_hidden.float()[mask]
    t = teacher_hidden.float()[mask]
    return (1.0 - F.cosine_similarity(s, t, dim=-1)).mean()


def distillation_loss(
    student_logits: torch.Tensor,
    teacher_logits: Optional[torch.Tensor],
    labels: torch.Tensor,
    alpha_kd: float,
    alpha_ce: float,
    temperature: float,
    alpha_cos: float = 0.0,
    hidden: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = None,
) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
    """alpha_kd x soft-target loss + alpha_ce x cross-entropy + alpha_cos x hidden cosine loss.

    ``teacher_logits`` may be None when alpha_kd is 0 (labels only: the ablation).
    ``hidden``: ``(student_hidden, teacher_hidden, attention_mask)``, needed when alpha_cos > 0.
    Terms with a zero weight are neither computed nor logged. Metrics are detached device
    tensors (no host sync): ``loss/train`` (the weighted sum) and the unweighted terms
    ``loss/kd``, ``loss/ce``, ``loss/cos``, comparable between runs with other weights.
    """
    terms: Dict[str, Tuple[float, torch.Tensor]] = {}  # key -> (weight, unweighted term)
    if alpha_kd:
        terms["loss/kd"] = (alpha_kd, soft_target_loss(student_logits, teacher_logits, temperature))
    if alpha_ce:
        terms["loss/ce"] = (alpha_ce, hard_target_loss(student_logits, labels))
    if alpha_cos:
        if hidden is None:
            raise ValueError("alpha_cos > 0 needs the hidden states (student, teacher, attention mask)")
        terms["loss/cos"] = (alpha_cos, hidden_cosine_loss(*hidden))
    if not terms:
        raise ValueError("every loss weight is zero: nothing to train on")
    loss = sum(weight * term for weight, term in terms.values())
    metrics = {"loss/train": loss.detach(), **{k: term.detach() for k, (_, term) in terms.items()}}
    return loss, metrics
