"""sample_gan.py's inspection tools on constructed cases: the truncation trick (psi=0 collapses
every seed onto the mean image, psi=1 is plain sampling, resampling keeps |z| under the
threshold), slerp paths (exact endpoints, norms kept), a per-class grid, and seeds.json (a
listed seed regenerates the same pixels)."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from gan_accel.models import build_models, save_generator
from gan_accel.sampling import interpolation_paths, seed_label, seed_latent, slerp
from helpers import load_script

sample_gan = load_script("sample_gan").main


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("gens")
    torch.manual_seed(0)
    G, _ = build_models(
        "dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none", g_norm="none"
    )
    save_generator(G, root / "uncond")
    G, _ = build_models(
        "dcgan",
        z_dim=8,
        channels=3,
        image_size=16,
        g_channels=8,
        d_channels=8,
        d_norm="none",
        g_norm="none",
        num_classes=3,
    )
    save_generator(G, root / "cond")
    return root


def pixels(path):
    with Image.open(path) as img:
        return np.asarray(img).copy()


def sample(exports, out, *flags, name="uncond"):
    assert sample_gan(["--generator", str(exports / name), "--output_dir", str(out), *flags]) == 0
    return out


def test_truncation_zero_gives_one_image_for_every_seed(exports, tmp_path):
    out = sample(exports, tmp_path / "psi0", "--num_images", "5", "--truncation", "0")
    first = pixels(out / "000000.png")
    assert all(np.array_equal(first, pixels(out / f"{i:06d}.png")) for i in range(1, 5))
    # ... which psi = 0.5 does not (the case above could pass on a generator that ignores z).
    half = sample(exports, tmp_path / "psi05", "--num_images", "5", "--truncation", "0.5")
    assert not np.array_equal(pixels(half / "000000.png"), pixels(half / "000001.png"))


def test_psi_one_is_plain_sampling(exports, tmp_path):
    plain = sample(exports, tmp_path / "plain", "--num_images", "3", "--seed", "7")
    psi1 = sample(exports, tmp_path / "psi1", "--num_images", "3", "--seed", "7", "--truncation", "1")
    for i in range(3):
        assert (plain / f"{i:06d}.png").read_bytes() == (psi1 / f"{i:06d}.png").read_bytes()
    # Plain sampling is N(0, I) from the image's own seed: image 1 is seed 8.
    assert torch.equal(seed_latent(8, 8, 1.0), torch.randn(8, generator=torch.Generator().manual_seed(8)))


def test_resample_truncation_keeps_values_under_the_threshold():
    plain = seed_latent(3, 4096)
    z = seed_latent(3, 4096, 0.5, "resample")
    assert float(z.abs().max()) <= 0.5
    inside = plain.abs() <= 0.5
    assert torch.equal(z[inside], plain[inside])  # only the outliers are redrawn
    assert torch.equal(z, seed_latent(3, 4096, 0.5, "resample"))  # still a function of the seed
    assert float(z.std()) < float(plain.std())


def test_slerp_endpoints_and_norms():
    a, b = seed_latent(0, 512), seed_latent(1, 512)
    assert torch.allclose(slerp(a, b, 0.0), a, atol=1e-5) and torch.allclose(slerp(a, b, 1.0), b, atol=1e-5)
    norms = torch.stack([slerp(a, b, t / 10).norm() for t in range(11)])
    low, high = sorted([float(a.norm()), float(b.norm())])
    assert float(norms.min()) >= low - 1e-3 and float(norms.max()) <= high + 1e-3
    # The straight line dips to ~1/sqrt(2) of the norm at its midpoint; slerp does not.
    assert float(((a + b) / 2).norm()) < 0.8 * low
    paths = interpolation_paths(torch.stack([a, b, seed_latent(2, 512)]), 5)
    assert paths.shape == (3, 5, 512)
    assert torch.allclose(paths[2, -1], a, atol=1e-5)  # the last path returns to the first seed


def test_listed_seed_regenerates_the_same_pixels(exports, tmp_path):
    out = sample(exports, tmp_path / "many", "--num_images", "6", "--seed", "10", "--truncation", "0.8")
    listing = json.loads((out / "seeds.json").read_text())
    entry = listing["images"][4]
    assert entry == {"file": "000004.png", "seed": 14}
    command = listing["regenerate"].format(seed=entry["seed"]).split()
    again = tmp_path / "again"
    argv = [str(again) if part == "OUT" else part for part in command[2:]]
    assert sample_gan(argv) == 0
    assert np.array_equal(pixels(again / "000000.png"), pixels(out / entry["file"]))


def test_conditional_labels_and_class_grid(exports, tmp_path):
    out = sample(exports, tmp_path / "cond", "--seeds", "4,9-10", "--class_grid", name="cond")
    listing = json.loads((out / "seeds.json").read_text())
    assert [(e["seed"], e["class_label"]) for e in listing["images"]] == [(s, seed_label(s, 3)) for s in (4, 9, 10)]
    # A row per class (3), a column per seed (3): 16 px tiles with 2 px padding.
    assert pixels(out / "class_grid.png").shape[:2] == (3 * 18 + 2, 3 * 18 + 2)
    one = sample(exports, tmp_path / "one", "--seeds", "9", "--class_label", "2", name="cond")
    listed = json.loads((one / "seeds.json").read_text())["images"]
    assert listed == [{"file": "000000.png", "seed": 9, "class_label": 2}]


def test_interpolation_grid_and_gif(exports, tmp_path):
    out = sample(exports, tmp_path / "interp", "--num_images", "4", "--interpolate", "6")
    assert pixels(out / "interpolation.png").shape[:2] == (4 * 18 + 2, 6 * 18 + 2)
    with Image.open(out / "interpolation.gif") as gif:
        assert gif.n_frames == 6 + 4 and gif.info.get("loop") == 0  # forward, then back without the ends
    # Column 0 of each row is its seed's own image, as plain sampling draws it.
    plain = sample(exports, tmp_path / "plain", "--num_images", "4")
    tile = pixels(out / "interpolation.png")[2 + 18 : 2 + 18 + 16, 2:18]
    assert np.array_equal(tile, pixels(plain / "000001.png"))
