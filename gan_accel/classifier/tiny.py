"""A tiny, randomly initialised DistilBERT with a WordPiece tokenizer trained on a corpus, saved
with ``save_pretrained``: it lets the whole classifier path run offline, in tests and on CPU.

It is for smoke runs only: it knows nothing but the corpus' vocabulary. Real fine-tuning starts
from a pretrained checkpoint such as ``distilbert-base-cased``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List

from ..config.fields import check_positive
from ..errors import ConfigError, UserError
from .data import read_table

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass
class TinyModelArguments:
    """Size of the tiny model and where its corpus comes from."""

    train_file: str = field(metadata={"help": "Corpus (.csv, .tsv or .jsonl) the WordPiece vocabulary is trained on."})
    output_dir: str = field(metadata={"help": "Folder to write the model and tokenizer into (save_pretrained)."})
    text_column: str = field(default="text", metadata={"help": "Column holding the text."})
    vocab_size: int = field(default=500, metadata={"help": "WordPiece vocabulary size (special tokens included)."})
    dim: int = field(default=64, metadata={"help": "Hidden size."})
    n_layers: int = field(default=2, metadata={"help": "Transformer layers."})
    n_heads: int = field(default=2, metadata={"help": "Attention heads (must divide --dim)."})
    max_position_embeddings: int = field(default=128, metadata={"help": "Longest sequence the model accepts."})
    seed: int = field(default=0, metadata={"help": "Seed for the random weights."})

    def __post_init__(self) -> None:
        for flag in ("vocab_size", "dim", "n_layers", "n_heads", "max_position_embeddings"):
            check_positive(flag, getattr(self, flag))
        if self.dim % self.n_heads:
            raise ConfigError(f"--n_heads {self.n_heads} must divide --dim {self.dim}")
        if self.vocab_size <= len(SPECIAL_TOKENS):
            raise ConfigError(
                f"--vocab_size must exceed the {len(SPECIAL_TOKENS)} special tokens; got {self.vocab_size}"
            )


def train_wordpiece(texts: List[str], vocab_size: int, model_max_length: int = 512):
    """A lower-casing BERT WordPiece tokenizer trained with ``tokenizers``, as a transformers tokenizer."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import DistilBertTokenizer

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(
        texts, vocab_size=vocab_size, min_frequency=1, special_tokens=SPECIAL_TOKENS, show_progress=False
    )
    return DistilBertTokenizer(vocab=wp.get_vocab(), do_lower_case=True, model_max_length=model_max_length)


def make_tiny_model(args: TinyModelArguments) -> Path:
    import torch
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    from ..loop.atomic import staged_files

    rows = read_table(args.train_file, "train_file")
    if args.text_column not in rows[0]:
        raise UserError(f"--train_file {args.train_file}: no column {args.text_column!r}; set --text_column")
    tokenizer = train_wordpiece(
        [str(r[args.text_column]) for r in rows], args.vocab_size, args.max_position_embeddings
    )
    config = DistilBertConfig(
        vocab_size=len(tokenizer),
        dim=args.dim,
        hidden_dim=4 * args.dim,
        n_layers=args.n_layers,
        n_heads=args.n_heads,
        max_position_embeddings=args.max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(args.seed)
    # A masked-LM checkpoint, like distilbert-base-cased on the Hub: loading it for classification
    # adds a fresh head, exactly as with the real model.
    model = DistilBertForMaskedLM(config)
    out = Path(args.output_dir)
    with staged_files(out, "tiny model") as tmp:  # a failed write leaves no half-saved model in out
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"Saved a tiny DistilBERT ({n_params / 1e6:.2f}M parameters, vocab {len(tokenizer)}) to {out}", flush=True)
    return out
