"""Distil a fine-tuned sequence classifier (the teacher) into a smaller one (the student):
python / accelerate launch / torchrun scripts/distill_classifier.py [--config FILE]
--train_file train.csv --validation_file dev.csv --teacher_model_name_or_path runs/teacher/model
--student_from_teacher [--student_layers N] --output_dir runs/student [flags]."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.distill_classifier, on the PATH
# as `gan-accel distill-classifier` once the package is installed.
from gan_accel.cli.distill_classifier import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
