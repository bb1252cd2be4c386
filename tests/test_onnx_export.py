"""export_onnx.py: the graph onnxruntime runs matches PyTorch (unconditional with truncation,
class-conditional, CycleGAN translator), at batch sizes other than the one it was traced with."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from gan_accel.cyclegan.export import save_translator
from gan_accel.cyclegan.models import ResnetGenerator
from gan_accel.models import build_models, load_generator, save_generator
from helpers import load_script, one_line_error
from run_fixtures import snapshot

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from gan_accel.models.onnx_export import run_onnx  # noqa: E402

export_onnx = load_script("export_onnx").main
TOLERANCE = 1e-5  # float32 kernels differ in summation order; measured 1e-9 to 2e-6 (docs/inspect_ship.md)


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none")
    save_generator(G, root / "dcgan")
    G, _ = build_models(
        "resnet", z_dim=8, channels=3, image_size=16, g_channels=8, d_channels=8, d_norm="none", num_classes=3
    )
    for embedding in (m for m in G.modules() if isinstance(m, torch.nn.Embedding)):
        torch.nn.init.normal_(embedding.weight)  # at init every class has gain 1, bias 0: labels would not matter
    save_generator(G, root / "resnet_cond")
    save_translator(ResnetGenerator(1, 8, 1), root / "A2B", "A2B", 16)
    for name in ("dcgan", "A2B"):  # the same exports with one weight NaN, as a diverged run leaves them
        nan_copy = root / f"{name}_nan"
        shutil.copytree(root / name, nan_copy)
        weights = load_file(nan_copy / "model.safetensors")
        weights[sorted(weights)[0] if name == "A2B" else "net.0.weight"].view(-1)[0] = float("nan")
        save_file(weights, nan_copy / "model.safetensors", metadata={"format": "pt"})
    return root


def test_unconditional_graph_matches_pytorch_with_truncation(exports, tmp_path, capsys):
    assert export_onnx(["--generator", str(exports / "dcgan"), "--output", str(tmp_path / "g.onnx")]) == 0
    assert "max abs difference" in capsys.readouterr().out
    G = load_generator(exports / "dcgan")
    z = torch.randn(5, 8)  # traced with a batch of 2
    for psi in (1.0, 0.5, 0.0):
        got = run_onnx(tmp_path / "g.onnx", {"z": z.numpy(), "truncation_psi": np.array([psi], dtype=np.float32)})
        with torch.no_grad():
            expected = G(z * psi).numpy()
        assert got.shape == (5, 1, 16, 16) and np.abs(got - expected).max() < TOLERANCE
    # psi = 0: every latent becomes the mean latent, every image the same.
    assert np.abs(got - got[:1]).max() < TOLERANCE


def test_conditional_graph_takes_class_labels(exports, tmp_path):
    export_onnx(["--generator", str(exports / "resnet_cond"), "--output", str(tmp_path / "c.onnx")])
    G = load_generator(exports / "resnet_cond")
    z, labels = torch.randn(4, 8), torch.tensor([0, 1, 2, 1])
    feeds = {"z": z.numpy(), "truncation_psi": np.ones(1, dtype=np.float32), "class_label": labels.numpy()}
    got = run_onnx(tmp_path / "c.onnx", feeds)
    with torch.no_grad():
        expected = G(z, labels).numpy()
    assert np.abs(got - expected).max() < TOLERANCE
    feeds["class_label"] = np.array([2, 2, 2, 2])
    assert np.abs(run_onnx(tmp_path / "c.onnx", feeds) - got).max() > 1e-3  # the label is used


def test_translator_graph_with_dynamic_batch_and_size(exports, tmp_path):
    assert export_onnx(["--translator", str(exports / "A2B")]) == 0
    assert (exports / "A2B" / "model.onnx").is_file()  # default: inside the export
    from gan_accel.cyclegan.export import load_translator

    G, _ = load_translator(exports / "A2B")
    x = torch.rand(3, 1, 24, 24) * 2 - 1
    with torch.no_grad():
        expected = G(x).numpy()
    assert np.abs(run_onnx(exports / "A2B" / "model.onnx", {"images": x.numpy()}) - expected).max() < TOLERANCE


@pytest.mark.parametrize(
    "flags,match",
    [
        (lambda e, tmp: [], "pass exactly one of --generator DIR and --translator DIR"),
        (
            lambda e, tmp: ["--generator", str(e / "A2B")],
            "a CycleGAN translator (A2B), not a noise-to-image generator; pass it as --translator",
        ),
        (lambda e, tmp: ["--translator", str(e / "A2B_nan")], "A2B_nan/model.safetensors holds NaN/Inf in"),
        (
            lambda e, tmp: ["--generator", str(e / "dcgan_nan")],
            "dcgan_nan/model.safetensors holds NaN/Inf in net.0.weight",
        ),
        (lambda e, tmp: ["--translator", str(e / "dcgan")], "--translator"),
        (lambda e, tmp: ["--generator", str(tmp)], "not an exported generator folder"),
        (lambda e, tmp: ["--generator", str(e / "dcgan"), "--output", str(tmp)], "--output"),
    ],
)
def test_bad_input(exports, tmp_path, capsys, flags, match):
    before = (snapshot(tmp_path), snapshot(exports))
    line = one_line_error(export_onnx, flags(exports, tmp_path), capsys)
    assert match in line, line
    assert (snapshot(tmp_path), snapshot(exports)) == before


def test_a_graph_that_differs_from_pytorch_fails_the_check(exports, tmp_path, capsys, monkeypatch):
    """The check can fail: a NaN output or one off by more than the tolerance is an error and
    no graph is written (before, "max abs difference nan" passed)."""
    import gan_accel.models.onnx_export as onnx_export

    real = onnx_export.run_onnx
    for wrong in (lambda out: out + 1e-3, lambda out: out * float("nan")):
        monkeypatch.setattr(onnx_export, "run_onnx", lambda path, feeds, wrong=wrong: wrong(real(path, feeds)))
        before = snapshot(tmp_path)
        line = one_line_error(
            export_onnx, ["--generator", str(exports / "dcgan"), "--output", str(tmp_path / "g.onnx")], capsys
        )
        assert "onnxruntime and PyTorch differ by" in line and "tolerance 1e-04" in line and "was not written" in line
        assert snapshot(tmp_path) == before


def test_missing_onnxruntime_is_one_line(exports, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a)
    )
    line = one_line_error(export_onnx, ["--generator", str(exports / "dcgan")], capsys)
    assert "pip install 'gan_accel[onnx]'" in line and "onnxruntime" in line


def test_a_full_disk_at_the_onnx_export_is_one_line_and_keeps_the_previous_graph(
    exports, tmp_path, capsys, monkeypatch
):
    (tmp_path / "g.onnx").write_bytes(b"an earlier graph")
    before = snapshot(tmp_path)

    def disk_full_halfway(module, args, path, **kwargs):
        Path(path).write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch.onnx, "export", disk_full_halfway)
    line = one_line_error(
        export_onnx, ["--generator", str(exports / "dcgan"), "--output", str(tmp_path / "g.onnx")], capsys
    )
    assert f"could not write ONNX graph {tmp_path / 'g.onnx'} ([Errno 28] No space left on device)" in line
    assert "the previous g.onnx is kept" in line
    assert snapshot(tmp_path) == before  # no .unchecked-g.onnx(.tmp) left behind
