"""Classify texts with a trained model folder: label and score per text.

python scripts/predict.py --model runs/x/model --text "a great film" "dull and awful"
python scripts/predict.py --model runs/x/model --input_file texts.txt --output_file preds.csv
"""

# Kept for existing commands and job scripts: the command is gan_accel.cli.predict, on the PATH
# as `gan-accel predict` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "predict")
