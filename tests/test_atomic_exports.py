"""Exports go through the same swap as checkpoints: a write that fails halfway leaves the previous
export complete and loadable, and no partial folder behind."""

import pytest
import torch

from gan_accel.errors import UserError
from gan_accel.models import build_models, load_generator, save_generator


def test_failed_generator_export_keeps_the_previous_one(tmp_path, monkeypatch):
    torch.manual_seed(0)
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=4, d_channels=4, d_norm="none")
    out = tmp_path / "generator"
    save_generator(G, out)
    before = {k: v.clone() for k, v in load_generator(out).state_dict().items()}

    def disk_full_halfway(self, folder, **kwargs):
        (tmp_path / folder).joinpath("model.safetensors").write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(G), "save_pretrained", disk_full_halfway)
    with torch.no_grad():
        next(G.parameters()).add_(1.0)
    with pytest.raises(
        UserError,
        match=r"could not write export .*generator \(\[Errno 28\] No space left on device\); the previous generator is kept",
    ):
        save_generator(G, out)
    after = load_generator(out).state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["generator"]
