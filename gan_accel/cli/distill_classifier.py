"""Distil a fine-tuned sequence classifier (the teacher) into a smaller one (the student):
gan-accel distill-classifier (or accelerate launch / torchrun -m gan_accel.cli.distill_classifier) [--config FILE]
--train_file train.csv --validation_file dev.csv --teacher_model_name_or_path runs/teacher/model
--student_from_teacher [--student_layers N] --output_dir runs/student [flags]."""

from __future__ import annotations

from gan_accel.classifier.distill.train import DistillTrainer

# Flags, --config, --dry_run, one-line errors and the run itself: gan_accel.runner.Task.
main = DistillTrainer.script(__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
