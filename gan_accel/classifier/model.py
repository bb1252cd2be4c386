"""Pretrained model and tokenizer, the optimizer with its decay groups, the warm-up schedule, and
the exported model folder."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import torch

from ..engine import LRSchedule, fused_or_foreach
from ..errors import UserError
from ..loop.atomic import atomic_folder
from ..loop.guard import NonFiniteError, all_finite
from .config import ClassifierModelArguments, ClassifierTrainArguments

NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


def _offline_hint(name: str, err: Exception) -> UserError:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return UserError(
        f"--model_name_or_path {name}: could not load it ({first}). Without network access a Hub name must already "
        "be in the Hugging Face cache; otherwise pass a local folder written by save_pretrained "
        "(for a smoke run: gan-accel make-tiny-model --train_file FILE --output_dir DIR)"
    )


def load_tokenizer(args: ClassifierModelArguments):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    except (OSError, ValueError) as err:
        raise _offline_hint(args.model_name_or_path, err) from None
    check_tokenizer("model_name_or_path", args.model_name_or_path, tokenizer)
    return tokenizer


# Files a tokenizer's vocabulary is read from. A model folder holding none of them (config.json and
# weights only) still "loads": AutoTokenizer falls back to a tokenizer of the config's model type
# with nothing but its special tokens, which maps every word to [UNK], so every text gets the same
# ids and predictions silently stop depending on the text.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)


def check_tokenizer(flag: str, name: str, tokenizer) -> None:
    """Refuse a tokenizer with no vocabulary of its own: a local folder without any tokenizer file,
    or (from any source) a tokenizer whose every token is a special token."""
    folder = Path(name)
    missing_files = folder.is_dir() and not any((folder / file).is_file() for file in TOKENIZER_FILES)
    special_only = len(tokenizer) <= len(set(tokenizer.all_special_ids))
    if missing_files or special_only:
        found = "no tokenizer files" if missing_files else f"a tokenizer of {len(tokenizer)} special tokens only"
        raise UserError(
            f"--{flag} {name}: {found} (tokenizer.json, vocab.txt, ...); every text would map to "
            "[UNK] tokens. Save the tokenizer next to the model (tokenizer.save_pretrained(FOLDER)) "
            "or copy its files from the model it was trained from"
        )


def load_config(args: ClassifierModelArguments):
    """The model's ``config.json`` alone (cheap): what ``--max_length`` is checked against."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(args.model_name_or_path)
    except (OSError, ValueError) as err:
        raise _offline_hint(args.model_name_or_path, err) from None


# A tokenizer whose ``model_max_length`` was never set reports a huge sentinel (int(1e30)).
UNSET_LENGTH = 10**9


def length_limit(tokenizer, configs: Sequence) -> Optional[int]:
    """Longest input, in tokens, that every model in ``configs`` can read: their position
    embeddings, and the tokenizer's ``model_max_length`` when set (RoBERTa-style models reserve
    positions for padding, so theirs is the tighter one). None when nothing bounds it."""
    limits = [
        value
        for config in configs
        for value in (getattr(config, "max_position_embeddings", None), getattr(config, "n_positions", None))
        if isinstance(value, int) and value > 0
    ]
    if 0 < tokenizer.model_max_length < UNSET_LENGTH:
        limits.append(int(tokenizer.model_max_length))
    return min(limits) if limits else None


def check_max_length(
    max_length: Optional[int], tokenizer, configs: Sequence, pair: bool = False, flag: str = "max_length"
) -> Optional[int]:
    """``--max_length`` checked against the tokenizer and the models before anything is written;
    returns it, or the limit when it is None. Shorter than the special tokens, the tokenizer
    silently skips truncation (and long texts crash later); longer than the position embeddings,
    the first long batch crashes mid-run ("size of tensor a ... must match")."""
    limit = length_limit(tokenizer, configs)
    if max_length is None:
        return limit
    special = tokenizer.num_special_tokens_to_add(pair=pair)
    shortest = special + (2 if pair else 1)  # at least one real token per text
    if max_length < shortest:
        raise UserError(
            f"--{flag} {max_length} leaves no room for text: the tokenizer adds {special} special "
            f"tokens to each {'pair' if pair else 'text'}; use at least {shortest}"
        )
    if limit is not None and max_length > limit:
        raise UserError(
            f"--{flag} {max_length} is longer than the model can read ({limit} tokens: its position "
            f"embeddings / the tokenizer's model_max_length); use --{flag} {limit} or less"
        )
    return max_length


def load_model(args: ClassifierModelArguments, label_names: List[str]):
    """``AutoModelForSequenceClassification`` with ``num_labels``/``id2label``/``label2id`` from the
    data; a new classification head is initialised from the (seeded) global RNG."""
    from transformers import AutoModelForSequenceClassification

    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            args.model_name_or_path,
            num_labels=len(label_names),
            id2label=dict(enumerate(label_names)),
            label2id={name: i for i, name in enumerate(label_names)},
            ignore_mismatched_sizes=True,  # a checkpoint fine-tuned on other labels gets a fresh head
        )
    except (OSError, ValueError) as err:
        raise _offline_hint(args.model_name_or_path, err) from None
    if args.gradient_checkpointing:
        # Non-reentrant checkpointing works under DDP and with inputs that need no grad.
        # (transformers 5 renamed gradient_checkpointing_enable; the old name goes in v6.)
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def build_optimizer(model: torch.nn.Module, args: ClassifierTrainArguments) -> torch.optim.Optimizer:
    """Two parameter groups: weight decay on weight matrices only, never on biases or LayerNorm."""
    decay = []
    no_decay = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if name.endswith(NO_DECAY) or p.ndim < 2 else decay).append(p)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if args.optimizer in ("adam", "adamw"):
        # torch Adam couples decay into the gradient (L2); with the default 0.0 that is moot.
        return fused_or_foreach(
            torch.optim.Adam if args.optimizer == "adam" else torch.optim.AdamW, groups, lr=args.learning_rate
        )
    from transformers.optimization import Adafactor

    # A fixed learning rate so the warm-up schedule drives it, as with Adam.
    return Adafactor(groups, lr=args.learning_rate, scale_parameter=False, relative_step=False, warmup_init=False)


@dataclass
class ScheduleLength:
    """How long the run is, in optimizer updates of ONE process, and the scheduler's tick counts.

    Accelerate's prepared scheduler steps ``num_processes`` times per optimizer update (so the
    schedule is expressed in updates of a single process over the unsharded data); the engine
    sizes it as ``total_updates * num_processes`` ticks, which equals the single-process update
    count over the unsharded data when the batches shard evenly, and is rounded up otherwise so
    the LR reaches exactly zero at the last update.
    """

    updates_per_epoch: int
    total_updates: int
    warmup_updates: int
    num_processes: int

    def lr_schedule(self) -> LRSchedule:
        """Linear warm-up then linear decay to 0 at the last update (the engine converts updates
        to scheduler ticks)."""
        return LRSchedule("linear", self.warmup_updates, self.total_updates)


def schedule_length(
    num_batches: int, num_processes: int, args: ClassifierTrainArguments, accumulation: int
) -> ScheduleLength:
    """``num_batches``: length of the unprepared (unsharded) train dataloader."""
    # Accelerate shards batches round-robin with even_batches=True: ceil(B / P) per process; an
    # epoch ends with a (possibly short) accumulation cycle, which Accelerate syncs at the end.
    per_process = math.ceil(num_batches / num_processes)
    updates_per_epoch = math.ceil(per_process / accumulation)
    total = args.max_steps or updates_per_epoch * args.num_train_epochs
    warmup = args.warmup_steps if args.warmup_steps is not None else math.ceil(args.warmup_ratio * total)
    if warmup >= total and total > 0 and args.warmup_steps is not None:
        raise UserError(f"--warmup_steps {warmup} must be smaller than the {total} optimizer updates of the run")
    return ScheduleLength(updates_per_epoch, total, min(warmup, max(total - 1, 0)), num_processes)


def export_model(model, tokenizer, out: Path) -> None:
    """``save_pretrained`` the (unwrapped) model and tokenizer into ``out``, atomically (the same
    swap as checkpoints): ``out`` always holds one complete model. Non-finite weights are refused:
    ``out`` keeps what it held."""
    if not bool(all_finite(model.parameters())):
        raise NonFiniteError(
            f"refusing to export {out}: the model's weights are not finite (NaN/Inf), the run "
            "diverged; the folder keeps its previous model. Lower --learning_rate"
        )
    with atomic_folder(out) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
