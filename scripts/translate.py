"""Translate a folder of images with a generator exported by train_cyclegan.py:

    python scripts/translate.py --generator RUN/generator_A2B --input_dir photos --output_dir paintings

Every image under --input_dir is resized (shorter side) and centre-cropped to the generator's
training size, translated, and written under --output_dir with the same relative file name.
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.translate, on the PATH
# as `gan-accel translate` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "translate")
