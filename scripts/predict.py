"""Classify texts with a trained model folder: label and score per text.

python scripts/predict.py --model runs/x/model --text "a great film" "dull and awful"
python scripts/predict.py --model runs/x/model --input_file texts.txt --output_file preds.csv
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.predict, on the PATH
# as `gan-accel predict` once the package is installed.
from gan_accel.cli.predict import __doc__, main  # noqa: F401 (the docstring is the --help text)

if __name__ == "__main__":
    raise SystemExit(main())
