"""Export a generator (or a CycleGAN translator) to ONNX, for inference with onnxruntime:
python scripts/export_onnx.py --generator RUN/generator          (writes RUN/generator/model.onnx)
python scripts/export_onnx.py --translator RUN/generator_A2B --output a2b.onnx
python scripts/export_onnx.py --generator RUN/best_generator --push_to_hub --hub_model_id USER/NAME
Needs the `onnx` extra: pip install 'gan_accel[onnx]'."""

# Kept for existing commands and job scripts: the command is gan_accel.cli.export_onnx, on the PATH
# as `gan-accel export-onnx` once the package is installed.
# Run as a program, it answers Ctrl-C from before torch's import (gan_accel.cli.script).
from gan_accel.cli import script

main = script(__name__, "export_onnx")
