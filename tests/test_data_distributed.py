"""Two processes (torchrun, gloo on CPU) stream from one decode cache: the main process builds it
while the other waits, nobody builds twice, and the run equals one process on the global batch."""

from data_fixtures import FOLDER_GAN, make_folder
from helpers import load_script
from test_distributed import torchrun
from test_gan_train import tensors_of

train_gan = load_script("train_gan").main


def test_two_processes_read_one_cache(tmp_path):
    folder = make_folder(tmp_path / "images")
    cache = tmp_path / "cache"
    flags = [*FOLDER_GAN, "--data_dir", str(folder), "--max_steps", "4", "--log_every", "1"]
    assert (
        train_gan(
            [
                *flags,
                "--output_dir",
                str(tmp_path / "single"),
                "--batch_size",
                "16",
                "--data_in_memory",
                "yes",
                "--data_cache_dir",
                "none",
            ]
        )
        == 0
    )
    proc = torchrun(
        [
            *flags,
            "--output_dir",
            str(tmp_path / "ddp"),
            "--batch_size",
            "8",
            "--data_in_memory",
            "no",
            "--dataloader_num_workers",
            "1",
            "--data_cache_dir",
            str(cache),
        ]
    )
    assert "processes: 2" in proc.stdout
    assert proc.stdout.count("Decode cache: building") == 1, proc.stdout[-3000:]
    entries = [p.name for p in cache.iterdir()]
    assert len(entries) == 1 and not entries[0].startswith(".")
    a = tensors_of(tmp_path / "single" / "checkpoints" / "step_00000004")
    b = tensors_of(tmp_path / "ddp" / "checkpoints" / "step_00000004")
    worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    assert worst < 1e-5, worst
