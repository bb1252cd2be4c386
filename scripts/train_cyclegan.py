"""Train a CycleGAN (unpaired image-to-image translation):
python / accelerate launch / torchrun scripts/train_cyclegan.py [--config FILE] [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_cyclegan, on the PATH
# as `gan-accel train-cyclegan` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "train_cyclegan")
