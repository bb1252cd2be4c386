"""What a task of one's own reuses (docs/engine.md, "Writing a task: reference"): the grid helper
and the GAN's data source."""

from types import SimpleNamespace

import pytest
import torch

from gan_accel.errors import ConfigError, UserError

CPU = torch.device("cpu")


def test_save_grid_lays_images_out_row_major_and_creates_the_folder(tmp_path):
    from PIL import Image

    from gan_accel.sampling import save_grid

    images = torch.linspace(-1, 1, 6).view(6, 1, 1, 1).expand(6, 1, 4, 4)  # 6 grey levels
    path = save_grid(images, tmp_path / "samples" / "grid.png", nrow=3)
    picture = Image.open(path)
    assert picture.size == (3 * 6 + 2, 2 * 6 + 2)  # 3 columns, 2 rows of 4 px tiles, 2 px borders
    row0 = [picture.getpixel((2 + 6 * j + 1, 3))[0] for j in range(3)]
    row1 = [picture.getpixel((2 + 6 * j + 1, 9))[0] for j in range(3)]
    assert row0 == sorted(row0) and row1 == sorted(row1) and row0[-1] < row1[0]  # images 0-2, then 3-5
    assert [p.name for p in path.parent.iterdir()] == ["grid.png"]


def test_save_grid_that_fails_mid_write_keeps_the_previous_grid(tmp_path, monkeypatch):
    import torchvision.utils

    from gan_accel.sampling import save_grid

    path = save_grid(torch.zeros(4, 1, 4, 4), tmp_path / "grid.png", nrow=2)
    before = path.read_bytes()

    def disk_full(tensor, fp, **kwargs):
        with open(fp, "wb") as f:
            f.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torchvision.utils, "save_image", disk_full)
    with pytest.raises(UserError, match=f"could not write image grid {path} .*No space left on device"):
        save_grid(torch.ones(4, 1, 4, 4), path, nrow=2)  # one line naming the grid (gan_accel.writes)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["grid.png"]  # no temporary file left behind


def test_open_images_reads_the_bundled_digits_as_the_gan_does():
    from gan_accel.data.source import open_images
    from gan_accel.gan.config import GANDataArguments

    printed = []
    accelerator = SimpleNamespace(device=CPU, print=printed.append, is_local_main_process=True)
    data = open_images(GANDataArguments(dataset="digits", image_size=16), accelerator)
    assert len(data) == 1797 and data.shape == (1, 16, 16) and data.num_classes == 10
    loader = data.make_loader(8, torch.utils.data.SequentialSampler(range(len(data))), 0, CPU)
    real, labels = data.real_batch(next(iter(loader)))
    assert real.shape == (8, 1, 16, 16) and real.min() >= -1 and real.max() <= 1
    assert labels.tolist() == data.labels[:8].tolist()


@pytest.mark.parametrize("limit", [None, 0])
def test_in_memory_batches_are_the_same_floats_whether_converted_once_or_per_batch(monkeypatch, limit):
    # Small in-memory sets are converted to floats once, where the loader is made (limit None);
    # above the size limit (0 here) each batch is converted: the same bits either way.
    from gan_accel.data import source
    from gan_accel.data.images import to_float_images

    if limit is not None:
        monkeypatch.setattr(source, "FLOAT_COPY_MAX_BYTES", limit)
    images = torch.randint(0, 256, (12, 3, 4, 4), dtype=torch.uint8)
    data = source.ImageSource("twelve", (3, 4, 4), None, [], True, "", images=images)
    loader = data.make_loader(5, torch.utils.data.SequentialSampler(range(12)), 0, CPU)
    assert data._on_device["images"].is_floating_point() == (limit is None)
    batch = torch.tensor([7, 0, 11])
    real, _ = data.real_batch(batch)
    assert real.dtype == torch.float32 and torch.equal(real, to_float_images(images[batch]))
    assert len(list(loader)) == 2


def test_check_batch_size_names_the_flag():
    from gan_accel.data.source import ImageSource

    source = ImageSource("ten", (1, 4, 4), None, [], True, "", images=torch.zeros(10, 1, 4, 4, dtype=torch.uint8))
    source.check_batch_size(5, 2)  # one full batch per process
    with pytest.raises(ConfigError, match="--batch_size 6 x 2 processes is larger than the dataset"):
        source.check_batch_size(6, 2)


def test_an_output_of_an_unknown_kind_is_refused():
    from gan_accel.runner import Output

    assert Output("grid.png", "record").kind == "record"
    with pytest.raises(TypeError, match="kind must be one of export, cache, record; got 'exports'"):
        Output("generator.pt", "exports")
