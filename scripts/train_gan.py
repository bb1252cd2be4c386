"""Train a GAN: python / accelerate launch / torchrun scripts/train_gan.py [--config FILE] [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.train_gan, on the PATH
# as `gan-accel train-gan` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "train_gan")
