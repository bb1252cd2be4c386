"""Distil a fine-tuned sequence classifier (the teacher) into a smaller one (the student):
python / accelerate launch / torchrun scripts/distill_classifier.py [--config FILE]
--train_file train.csv --validation_file dev.csv --teacher_model_name_or_path runs/teacher/model
--student_from_teacher [--student_layers N] --output_dir runs/student [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.distill_classifier, on the PATH
# as `gan-accel distill-classifier` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "distill_classifier")
