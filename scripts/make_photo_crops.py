"""Build a folder of real-photo crops: python scripts/make_photo_crops.py --output_dir photos [flags]."""

# Kept for checkouts and job scripts: the command is gan_accel.cli.make_photo_crops, on the PATH
# as `gan-accel make-photo-crops` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "make_photo_crops")
