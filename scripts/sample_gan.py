"""Write images from an exported generator, each from its own seed (listed in seeds.json, so any
one can be regenerated with --seeds), with the truncation trick, latent interpolation (a grid and
an animated GIF) and a per-class grid:
python scripts/sample_gan.py --generator RUN/generator --num_images N --output_dir DIR."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.sample_gan, on the PATH
# as `gan-accel sample-gan` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "sample_gan")
