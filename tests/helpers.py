"""Test helpers: import the thin scripts as modules so tests call ``main(argv)`` in-process."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# In the engine's warning for a phase whose backward writes gradients into a trained network it
# neither trains nor freezes: a correct recipe never prints it.
GRADIENT_LEAK = "neither trains nor freezes"

TINY_GAN = [
    "--dataset",
    "digits",
    "--image_size",
    "16",
    "--z_dim",
    "8",
    "--g_channels",
    "8",
    "--d_channels",
    "8",
    "--batch_size",
    "32",
    "--log_every",
    "2",
    "--sample_every",
    "0",
    "--num_sample_images",
    "16",
]


def load_script(name: str):
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"script_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def one_line_error(main, argv, capsys) -> str:
    """Run a script's ``main(argv)`` and assert the user-error contract: exit code 2 and ONE line
    ``error: ...`` on stderr with no traceback; return that line."""
    import pytest

    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


def write_png(path: Path, array, mode=None) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode=mode).save(path)


def kept_evaluation(evals):
    """The evaluation whose generator best_generator/ holds: the last that scored below the lowest FID
    so far or whose interval reached it (a tie goes to the later, longer-trained generator)."""
    lowest, kept = float("inf"), None
    for r in evals:
        if r["eval/fid"] < lowest or r["eval/fid_ci_low"] <= lowest:
            kept = r
        lowest = min(lowest, r["eval/fid"])
    return kept


def repaint_keeping_size_and_mtime(path: Path, value: int = 0) -> None:
    """Make the PNG at ``path`` one flat ``value`` (black by default), keeping its byte size and
    modification time: what ``cp -p``, ``rsync -a`` or ``tar x`` of other images of that size and
    date leaves. A ``tEXt`` chunk pads the (smaller) flat image to the old size."""
    import io
    import os

    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    st = path.stat()
    with Image.open(path) as img:
        flat = Image.new(img.mode, img.size, value)
    buffer = io.BytesIO()
    flat.save(buffer, "PNG")
    pad = st.st_size - len(buffer.getvalue()) - 12 - len(b"pad\0")  # chunk: length, type, CRC; key, NUL
    assert pad >= 0, f"{path}: too small to pad"
    info = PngInfo()
    info.add_text("pad", "x" * pad)
    flat.save(path, "PNG", pnginfo=info)
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
