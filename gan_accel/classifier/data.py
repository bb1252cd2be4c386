"""Labelled texts: reading CSV/TSV/JSON Lines (or a Hub dataset), the label set, tokenisation and
the dataloaders.

Rows are plain dicts until tokenisation; the train dataloader draws its order from
:class:`ResumableSampler` so a checkpoint can restore the exact position inside an epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from ..data.length_grouped import LengthGroupedSampler, longest_first
from ..data.sampler import ResumableSampler
from ..errors import UserError
from .config import ClassifierDataArguments
from .table import Table, check_rows, read_table, where  # noqa: F401 (Table, read_table: re-exported)


# ---- reading (files: .table, which keeps line numbers for errors) ------------------------------
def load_hub_splits(name: str, config: Optional[str]) -> Dict[str, List[dict]]:
    """``{"train": rows, "validation": rows, "label_names": [...] or None}`` from the Hub."""
    try:
        import datasets
    except ImportError:
        raise UserError(
            f"--dataset_name {name} needs the 'datasets' package: pip install 'gan_accel[hub]' "
            "(or pass --train_file/--validation_file)"
        ) from None
    try:
        ds = datasets.load_dataset(name, config)
    except Exception as err:  # the Hub raises many types (connection, missing config, ...)
        raise UserError(f"--dataset_name {name}: could not load it ({str(err).splitlines()[0]})") from None
    if "train" not in ds or "validation" not in ds:
        raise UserError(f"--dataset_name {name}: needs 'train' and 'validation' splits; it has {', '.join(ds)}")
    return {split: [dict(r) for r in ds[split]] for split in ("train", "validation")} | {
        "label_names": getattr(ds["train"].features.get("label"), "names", None)
    }


def check_columns(rows: List[dict], columns: Sequence[str], source: str) -> None:
    present = rows[0].keys()
    for column in columns:
        if column not in present:
            raise UserError(
                f"{source}: no column {column!r} (columns: {', '.join(map(str, present))}); "
                "set --text_column/--text_pair_column/--label_column"
            )


# ---- labels ---------------------------------------------------------------------------------
def _label_key(value) -> str:
    # Labels are compared as strings: CSV gives "1", JSON gives 1, both mean the same class.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def label_names_from(values: Sequence) -> List[str]:
    """Sorted distinct labels: numerically when all look like integers, else lexicographically."""
    names = sorted({_label_key(v) for v in values})
    try:
        return sorted(names, key=int)
    except ValueError:
        return names


def encode_labels(rows: List[dict], column: str, label2id: Dict[str, int], source: str) -> List[int]:
    ids = []
    for i, row in enumerate(rows):
        key = _label_key(row[column])
        if key not in label2id:
            raise UserError(
                f"{source}: {where(rows, i)} has label {key!r}, not among the training labels "
                f"({', '.join(label2id)}); fix the file or pass --label_names"
            )
        ids.append(label2id[key])
    return ids


# ---- tokenised dataset ----------------------------------------------------------------------
class EncodedDataset(Dataset):
    """Tokenised examples as lists of ids (unpadded); :class:`DataCollatorWithPadding` pads per batch."""

    def __init__(self, encodings: Dict[str, List[List[int]]], labels: List[int]) -> None:
        self.encodings = encodings
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        return {**{k: v[i] for k, v in self.encodings.items()}, "labels": self.labels[i]}


@dataclass
class LabelledRows:
    """Both splits read and checked, labels as class ids; not yet tokenised."""

    rows: Dict[str, List[dict]]
    labels: Dict[str, List[int]]
    label_names: List[str]


@dataclass
class ClassificationData:
    train: EncodedDataset
    validation: EncodedDataset
    label_names: List[str]


def read_labelled_rows(args: ClassifierDataArguments) -> LabelledRows:
    """Read both splits, check their columns and map labels to ids. Cheap and done before the run
    folder is touched, so a bad file fails fast and leaves nothing behind."""
    hub_names = None
    if args.dataset_name:
        splits = load_hub_splits(args.dataset_name, args.dataset_config)
        hub_names = splits.pop("label_names")
        sources = {s: f"--dataset_name {args.dataset_name} ({s})" for s in splits}
    else:
        splits = {
            "train": read_table(args.train_file, "train_file"),
            "validation": read_table(args.validation_file, "validation_file"),
        }
        sources = {
            "train": f"--train_file {args.train_file}",
            "validation": f"--validation_file {args.validation_file}",
        }
    columns = [args.text_column, args.label_column] + ([args.text_pair_column] if args.text_pair_column else [])
    for split, rows in splits.items():
        check_columns(rows, columns, sources[split])
        check_rows(rows, columns[:1] + columns[2:], args.label_column, sources[split])

    names = args.label_names or hub_names or label_names_from([r[args.label_column] for r in splits["train"]])
    if len(names) < 2:
        raise UserError(f"{sources['train']}: only one label ({names[0]!r}); a classifier needs at least two")
    label2id = {name: i for i, name in enumerate(names)}
    if hub_names and not args.label_names:
        label2id.update({str(i): i for i in range(len(names))})  # Hub ClassLabel columns hold ids
    labels = {
        split: encode_labels(rows, args.label_column, label2id, sources[split]) for split, rows in splits.items()
    }
    return LabelledRows(splits, labels, list(names))


def encode_data(raw: LabelledRows, args: ClassifierDataArguments, tokenizer) -> ClassificationData:
    """Tokenise both splits. Call under ``accelerator.main_process_first()``."""
    encoded = {
        split: EncodedDataset(tokenize(rows, args, tokenizer), raw.labels[split]) for split, rows in raw.rows.items()
    }
    return ClassificationData(encoded["train"], encoded["validation"], raw.label_names)


def tokenize(rows: List[dict], args: ClassifierDataArguments, tokenizer) -> Dict[str, List[List[int]]]:
    texts = [str(r[args.text_column] or "") for r in rows]
    pairs = [str(r[args.text_pair_column] or "") for r in rows] if args.text_pair_column else None
    enc = tokenizer(texts, pairs, truncation=True, max_length=args.max_length)
    return {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


# ---- dataloaders ----------------------------------------------------------------------------
def build_dataloaders(
    data: ClassificationData,
    tokenizer,
    batch_size: int,
    eval_batch_size: int,
    seed: int,
    group_by_length: bool = False,
    pad_to_multiple_of: Optional[int] = None,
):
    """Train loader (resumable shuffled order) and eval loader (fixed order), both unprepared.

    Each gets its own ``torch.Generator``: a DataLoader draws its workers' base seed when an
    iterator is created, from the global RNG by default. That would shift dropout's RNG stream
    on a mid-epoch resume (the iterator is created at a different step), breaking exact resume.
    ``group_by_length``: train batches of similar lengths (see :mod:`gan_accel.data.length_grouped`);
    evaluation batches are always taken longest first, since the metrics ignore the order.
    """
    from transformers import DataCollatorWithPadding

    collate = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=pad_to_multiple_of)
    if group_by_length:
        sampler = LengthGroupedSampler(text_lengths(data.train), batch_size, seed=seed)
    else:
        sampler = ResumableSampler(len(data.train), seed=seed)
    train_dl = DataLoader(
        data.train,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=collate,
        generator=torch.Generator().manual_seed(seed),
    )
    eval_dl = DataLoader(
        data.validation,
        batch_size=eval_batch_size,
        sampler=longest_first(text_lengths(data.validation)),
        collate_fn=collate,
        generator=torch.Generator().manual_seed(seed),
    )
    return train_dl, eval_dl, sampler


def text_lengths(dataset: EncodedDataset) -> List[int]:
    """Tokens per example (pairs counted together), before padding."""
    return [len(ids) for ids in dataset.encodings["input_ids"]]
