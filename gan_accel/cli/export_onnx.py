"""Export a generator (or a CycleGAN translator) to ONNX, for inference with onnxruntime:
gan-accel export-onnx --generator RUN/generator          (writes RUN/generator/model.onnx)
gan-accel export-onnx --translator RUN/generator_A2B --output a2b.onnx
gan-accel export-onnx --generator RUN/best_generator --push_to_hub --hub_model_id USER/NAME
Needs the `onnx` extra: pip install 'gan_accel[onnx]'."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from gan_accel.config import check_hub_model_id, parse_config
from gan_accel.data.paths import check_can_write, check_folders, is_within
from gan_accel.errors import ConfigError, UserError, cli_entry
from gan_accel.writes import declare_output

# Largest difference --check accepts between onnxruntime's output and PyTorch's, on images in
# [-1, 1]: float32 kernels sum in another order, measured 1e-9 to 2e-6 (docs/inspect_ship.md);
# a wrong graph differs by far more.
CHECK_TOLERANCE = 1e-4


@dataclass
class ExportOnnxArguments:
    generator: Optional[str] = field(
        default=None, metadata={"help": "Exported generator folder (OUTPUT_DIR/generator or best_generator)."}
    )
    translator: Optional[str] = field(
        default=None,
        metadata={"help": "Exported CycleGAN translator folder (OUTPUT_DIR/generator_A2B or generator_B2A)."},
    )
    output: Optional[str] = field(
        default=None, metadata={"help": "ONNX file to write (default: model.onnx inside the export folder)."}
    )
    check: bool = field(
        default=True,
        metadata={
            "help": "Run the graph once with onnxruntime against PyTorch; a difference above 1e-4 (or NaN) is an error and nothing is written."
        },
    )
    push_to_hub: bool = field(
        default=False,
        metadata={"help": "Then upload the export folder (weights, model card, model.onnx) to --hub_model_id."},
    )
    hub_model_id: Optional[str] = field(default=None, metadata={"help": "Hub repo for --push_to_hub, as USER/NAME."})
    hub_token: Optional[str] = field(
        default=None, metadata={"help": "Hub token (default: HF_TOKEN or `hf auth login`)."}
    )
    hub_private: bool = field(default=False, metadata={"help": "Create the --hub_model_id repo as private."})
    debug: bool = field(default=False, metadata={"help": "Show full tracebacks."})

    def __post_init__(self) -> None:
        for flag in ("generator", "translator", "output"):
            if getattr(self, flag) is not None and not getattr(self, flag).strip():
                raise ConfigError(f"--{flag} is empty; pass a path")
        if (self.generator is None) == (self.translator is None):
            raise ConfigError("pass exactly one of --generator DIR and --translator DIR")
        if self.output is not None and Path(self.output).is_dir():
            raise ConfigError(f"--output {self.output}: is a folder; pass a file name such as model.onnx")
        if self.output is not None and Path(self.output).suffix.lower() != ".onnx":
            # The names it owns: another name may be the user's own file, replaced by a graph.
            raise ConfigError(f"--output {self.output}: not a .onnx file name; pass a name such as model.onnx")
        if self.push_to_hub and not self.hub_model_id:
            raise ConfigError("--push_to_hub needs --hub_model_id USER/NAME (the Hub repo to create or update)")
        check_hub_model_id("hub_model_id", self.hub_model_id)
        if self.push_to_hub and self.output is not None:
            raise ConfigError("--push_to_hub uploads the export folder with model.onnx in it; drop --output")


@cli_entry
def main(argv: Optional[Sequence[str]] = None) -> int:
    (args,) = parse_config((ExportOnnxArguments,), argv, description=__doc__)
    from gan_accel.models.onnx_export import ONNX_FILE, require_onnx

    require_onnx()
    import torch

    from gan_accel.models.onnx_export import export_generator_onnx, export_translator_onnx

    source_flag, source = (
        ("--generator", args.generator) if args.generator is not None else ("--translator", args.translator)
    )
    if args.output and not is_within(args.output, source):  # the default, model.onnx, goes inside the export
        check_folders({source_flag: source}, {"--output": args.output})
    else:  # a read-only export folder is found before the model is loaded and traced
        target = args.output or str(Path(source) / ONNX_FILE)
        check_can_write("--output", target)
        declare_output("--output", target)
    if args.generator is not None:
        from gan_accel.models import load_generator

        source = Path(args.generator)
        G = load_generator(source, translator_hint=f"pass it as --translator {source}")
        out = Path(args.output) if args.output else source / ONNX_FILE

        def export(path: Path) -> dict:
            return export_generator_onnx(G, path)

        z = torch.randn(3, G.z_dim, generator=torch.Generator().manual_seed(0))
        labels = torch.arange(3) % G.num_classes if G.num_classes else None
        feeds = {
            "z": z.numpy(),
            "truncation_psi": torch.ones(1).numpy(),
            **({"class_label": labels.numpy()} if labels is not None else {}),
        }
        with torch.no_grad():
            expected = G(z, labels)
    else:
        from gan_accel.cyclegan.export import load_translator

        source = Path(args.translator)
        try:
            G, config = load_translator(source)
        except UserError as err:
            raise UserError(str(err).replace("--generator", "--translator", 1)) from None
        out = Path(args.output) if args.output else source / ONNX_FILE
        size = int(config["image_size"])

        def export(path: Path) -> dict:
            return export_translator_onnx(G, path, size)

        x = torch.rand(3, G.channels, size, size, generator=torch.Generator().manual_seed(0)) * 2 - 1
        feeds = {"images": x.numpy()}
        with torch.no_grad():
            expected = G(x)
    inputs, diff = write_checked(export, out, feeds if args.check else None, expected)
    print(f"Wrote {out} (inputs: {', '.join(f'{k} {v}' for k, v in inputs.items())})")
    if args.check:
        print(f"onnxruntime vs PyTorch on 3 inputs: max abs difference {diff:.2e} (tolerance {CHECK_TOLERANCE:.0e})")
    if args.push_to_hub:
        from gan_accel.models.hub import publish

        publish(source, args)
    return 0


def write_checked(export: Callable[[Path], dict], out: Path, feeds: Optional[dict], expected) -> tuple:
    """``(inputs, largest difference or None)``: ``export(path)`` writes the graph beside ``out``;
    with ``feeds`` onnxruntime runs it against PyTorch's ``expected``; only then is it renamed to
    ``out``. A failed write or check leaves ``out`` as it was and nothing beside it."""
    import torch

    from gan_accel.loop.atomic import write_failure
    from gan_accel.models.onnx_export import run_onnx
    from gan_accel.writes import write_point

    candidate = out.with_name(f".unchecked-{out.name}")  # beside out: the rename cannot fail halfway
    try:
        write_point(candidate)
        inputs = export(candidate)
        diff = None
        if feeds is not None:
            diff = float(abs(torch.from_numpy(run_onnx(candidate, feeds)) - expected).max())
            if not diff <= CHECK_TOLERANCE:  # NaN fails too: a graph of NaN is not a match
                raise UserError(
                    f"export-onnx: onnxruntime and PyTorch differ by {diff:.2e} on 3 inputs (tolerance "
                    f"{CHECK_TOLERANCE:.0e}); {out} was not written. Rerun with --debug and report it"
                )
        candidate.replace(out)
    except BaseException as err:
        candidate.unlink(missing_ok=True)
        if isinstance(err, OSError):  # a full disk; the exporter's own RuntimeErrors are not about the disk
            kept = f"the previous {out.name} is kept" if out.exists() else "nothing was written"
            raise write_failure("ONNX graph", out, err, kept) from err
        raise
    return inputs, diff


if __name__ == "__main__":
    raise SystemExit(main())
