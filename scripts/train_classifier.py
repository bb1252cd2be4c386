"""Fine-tune a sequence classifier: python / accelerate launch / torchrun scripts/train_classifier.py
[--config FILE] --train_file train.csv --validation_file dev.csv --output_dir runs/x [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_classifier, on the PATH
# as `gan-accel train-classifier` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "train_classifier")
