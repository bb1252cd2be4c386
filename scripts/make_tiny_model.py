"""Train a WordPiece tokenizer on a corpus and save a tiny random DistilBERT for offline smoke runs.

python scripts/make_tiny_model.py --train_file data/train.csv --output_dir tiny-distilbert
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.make_tiny_model, on the PATH
# as `gan-accel make-tiny-model` once the package is installed.
from gan_accel.cli.make_tiny_model import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
