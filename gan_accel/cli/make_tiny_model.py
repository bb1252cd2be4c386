"""Train a WordPiece tokenizer on a corpus and save a tiny random DistilBERT for offline smoke runs.

gan-accel make-tiny-model --train_file data/train.csv --output_dir tiny-distilbert
"""

from __future__ import annotations

from gan_accel.config.parse import parse_config
from gan_accel.errors import cli_entry


@cli_entry
def main(argv=None) -> int:
    from gan_accel.classifier.tiny import TinyModelArguments, make_tiny_model
    from gan_accel.data.paths import check_folders

    (args,) = parse_config((TinyModelArguments,), argv, description=__doc__)
    # Before the tokenizer is trained: a read-only --output_dir, or one inside the corpus' folder, is one line.
    check_folders({"--train_file": args.train_file}, {"--output_dir": args.output_dir})
    make_tiny_model(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
