"""Train a WordPiece tokenizer on a corpus and save a tiny random DistilBERT for offline smoke runs.

python scripts/make_tiny_model.py --train_file data/train.csv --output_dir tiny-distilbert
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.make_tiny_model, on the PATH
# as `gan-accel make-tiny-model` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "make_tiny_model")
