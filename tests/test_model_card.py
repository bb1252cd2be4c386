"""Every export carries a Hugging Face model card: YAML metadata (library, tags, pipeline tag,
dataset, metrics with their protocol), a sample grid, the training settings, and a loading line
that runs as written; --push_to_hub hands the export folder to huggingface_hub (mocked: no
network in tests) and never writes the token anywhere."""

import re
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard
from PIL import Image

from gan_accel.cyclegan.export import save_translator
from gan_accel.cyclegan.models import ResnetGenerator
from gan_accel.models import build_models, load_generator, save_generator
from helpers import load_script
from run_fixtures import BASE_FLAGS, run_gan, user_error

train_gan = load_script("train_gan").main

PROTOCOL = {"feature_extractor": "inception", "num_real": 10000, "num_fake": 10000, "split": "test", "seed": 0}


def code_block(card_text: str) -> str:
    return re.search(r"```python\n(.*?)```", card_text, re.S).group(1)


def tiny_generator(num_classes=0):
    torch.manual_seed(0)
    G, _ = build_models(
        "dcgan",
        z_dim=8,
        channels=1,
        image_size=16,
        g_channels=8,
        d_channels=8,
        d_norm="none",
        g_norm="none",
        num_classes=num_classes,
    )
    return G


def test_generator_card_metadata_metrics_and_settings(tmp_path):
    run_config = {"dataset": "mnist", "lr_g": 0.0002, "max_steps": 4}
    metrics = [
        {"name": "FID", "value": 12.5, "protocol": PROTOCOL},
        {"name": "precision", "value": 0.7, "protocol": {}},
    ]
    save_generator(tiny_generator(), tmp_path / "g", run_config=run_config, metrics=metrics)
    card = ModelCard.load(tmp_path / "g" / "README.md")
    data = card.data
    assert data.library_name == "pytorch" and data.pipeline_tag == "unconditional-image-generation"
    assert {"gan_accel", "dcgan", "pytorch_model_hub_mixin"} <= set(data.tags)
    assert data.datasets == ["ylecun/mnist"]
    fid = data.eval_results[0]
    assert (fid.metric_type, fid.metric_value, fid.metric_args) == ("fid", 12.5, PROTOCOL)
    assert '"num_fake": 10000' in card.text and "| precision | 0.7 |" in card.text
    assert '"lr_g": 0.0002' in card.text  # the training settings
    assert "![samples](samples.png)" in card.text
    with Image.open(tmp_path / "g" / "samples.png") as img:
        assert img.size == (4 * 18 + 2, 4 * 18 + 2)  # 16 samples, 4 x 4


def test_the_cards_loading_line_runs(tmp_path):
    G = tiny_generator(num_classes=3)
    save_generator(G, tmp_path / "g")
    scope = {}
    exec(code_block((tmp_path / "g" / "README.md").read_text()), scope)  # noqa: S102  # the card's own snippet
    assert scope["images"].shape == (4, 1, 16, 16)
    z = torch.randn(2, 8)
    assert torch.equal(scope["G"](z, torch.tensor([0, 2])), load_generator(tmp_path / "g")(z, torch.tensor([0, 2])))
    card = ModelCard.load(tmp_path / "g" / "README.md")
    assert "class-conditional" in card.data.tags and card.data.eval_results is None
    with Image.open(tmp_path / "g" / "samples.png") as img:
        assert img.size == (8 * 18 + 2, 3 * 18 + 2)  # a row per class


def test_translator_card(tmp_path):
    grid = tmp_path / "grid.png"
    Image.new("RGB", (40, 20)).save(grid)
    save_translator(
        ResnetGenerator(1, 8, 1), tmp_path / "t", "A2B", 16, run_config={"dataset": "digits"}, samples=grid
    )
    text = (tmp_path / "t" / "README.md").read_text()
    assert ModelCard.load(tmp_path / "t" / "README.md").data.pipeline_tag == "image-to-image"
    assert (tmp_path / "t" / "samples.png").read_bytes() == grid.read_bytes()
    scope = {}
    exec(code_block(text), scope)  # noqa: S102
    assert scope["y"].shape == scope["x"].shape


class FakeApi:
    """Records what would go to the Hub: the arguments, and the folder's files at upload time."""

    calls = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        FakeApi.calls.append(("create_repo", repo_id, kwargs, self.token))

    def upload_folder(self, **kwargs):
        files = sorted(p.name for p in Path(kwargs["folder_path"]).iterdir())
        FakeApi.calls.append(("upload_folder", kwargs, files))
        return type("Commit", (), {"commit_url": f"https://huggingface.co/{kwargs['repo_id']}/commit/0"})()


def test_push_to_hub_uploads_the_export_with_its_card(tmp_path, monkeypatch):
    import huggingface_hub

    FakeApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    out = tmp_path / "run"
    assert run_gan(out, "--push_to_hub", "--hub_model_id", "me/tiny", "--hub_token", "hf_SECRET", "--hub_private") == 0
    (_, repo, kwargs, token), (_, upload, files) = FakeApi.calls
    assert (repo, kwargs["private"], kwargs["exist_ok"], token) == ("me/tiny", True, True, "hf_SECRET")
    assert upload["repo_id"] == "me/tiny" and upload["folder_path"] == str(out / "generator")
    assert files == ["README.md", "config.json", "model.safetensors", "samples.png"]
    assert "from_pretrained('me/tiny')" in (out / "generator" / "README.md").read_text()
    # The token is in no file of the run (config.json, checkpoints, the card).
    assert not [p for p in out.rglob("*") if p.is_file() and b"hf_SECRET" in p.read_bytes()]


def test_a_failed_upload_is_one_line_and_keeps_the_export(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    class Offline(FakeApi):
        def create_repo(self, repo_id, **kwargs):
            raise ConnectionError("no network")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "run"
    line = user_error(
        train_gan, ["--output_dir", str(out), *BASE_FLAGS, "--push_to_hub", "--hub_model_id", "me/tiny"], capsys
    )
    assert "--push_to_hub: uploading" in line and "no network" in line and "kept on disk" in line
    assert (out / "generator" / "model.safetensors").is_file()


def test_push_to_hub_needs_a_repo_id(tmp_path, capsys):
    line = user_error(train_gan, ["--output_dir", str(tmp_path / "run"), "--push_to_hub"], capsys)
    assert "--push_to_hub needs --hub_model_id" in line
    assert not (tmp_path / "run").exists()


def test_export_onnx_pushes_an_existing_export(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    import huggingface_hub

    FakeApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    save_generator(tiny_generator(), tmp_path / "best_generator")
    argv = ["--generator", str(tmp_path / "best_generator"), "--push_to_hub", "--hub_model_id", "me/best"]
    assert load_script("export_onnx").main(argv) == 0
    (_, repo, kwargs, _), (_, upload, files) = FakeApi.calls
    assert repo == "me/best" and upload["folder_path"] == str(tmp_path / "best_generator")
    assert files == ["README.md", "config.json", "model.onnx", "model.safetensors", "samples.png"]
    assert "DCGANGenerator.from_pretrained('me/best')" in (tmp_path / "best_generator" / "README.md").read_text()


def test_card_metrics_from_an_evaluation(tmp_path):
    from gan_accel.models.hub import card_metrics

    results = {
        "fid": 31.5,
        "kid_mean": 0.012,
        "precision": 0.61,
        "recall": None,
        "protocol": PROTOCOL,
        "intervals": {"fid": [29.0, 34.0], "kid": [0.010, 0.014]},
    }
    metrics = card_metrics(results)
    assert [(m["name"], m["value"]) for m in metrics] == [("fid", 31.5), ("kid_mean", 0.012), ("precision", 0.61)]
    assert metrics[0]["protocol"] == {**PROTOCOL, "interval": [29.0, 34.0]} and metrics[2]["protocol"] == PROTOCOL
    save_generator(tiny_generator(), tmp_path / "g", metrics=metrics)
    fid = ModelCard.load(tmp_path / "g" / "README.md").data.eval_results[0]
    assert fid.metric_args["interval"] == [29.0, 34.0] and fid.metric_args["num_fake"] == 10000
