"""The GAN's training images: which dataset, its size and channels, and how batches reach the
accelerator (in memory or streamed from the decode cache)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ...config.fields import FREE, check_choice, check_positive, choice
from ...data import DATASETS
from ...errors import ConfigError

IN_MEMORY = ("auto", "yes", "no")


@dataclass
class GANDataArguments:
    dataset: str = choice(
        "digits",
        DATASETS,
        "Training images: scikit-learn's bundled digits (offline), an image folder, a torchvision dataset, a folder through `datasets` (imagefolder) or a Hugging Face dataset (hub, with --dataset_name).",
    )
    data_dir: Optional[str] = field(
        default=None,
        metadata={"reads": "folder dataset", "help": "Folder of images (--dataset folder) or torchvision root."},
    )
    download: bool = field(
        default=False, metadata={"help": "Let torchvision download MNIST/Fashion-MNIST/CIFAR-10 into --data_dir."}
    )
    image_size: int = field(
        default=32, metadata={"help": "Square training resolution (images are resized and centre-cropped)."}
    )
    channels: int = field(default=1, metadata={"help": "1 (grey) or 3 (RGB); images are converted."})
    # Large datasets (README: "Train on a large image folder"): gan_accel/data/source.py.
    dataset_name: Optional[str] = field(
        default=None,
        metadata={
            "help": "A Hugging Face dataset to load with `datasets` (extra `hub`); implies --dataset hub. Labels from its `label` column."
        },
    )
    dataset_split: str = field(
        default="train", metadata={"help": "Split of --dataset_name / --dataset imagefolder to train on."}
    )
    data_in_memory: str = choice(
        "auto",
        IN_MEMORY,
        "Keep the decoded dataset in one uint8 tensor on the accelerator (yes), stream batches from the decode cache through DataLoader workers (no), or decide by --max_data_memory_mb (auto).",
        resume=FREE,
    )
    max_data_memory_mb: Optional[float] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Budget of --data_in_memory auto, in MB (default: half the accelerator's free memory; on the CPU half the available RAM, split between the machine's processes).",
        },
    )
    data_cache_dir: Optional[str] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Decode cache of folders and `datasets` images, shared by runs (default $GAN_ACCEL_CACHE, else ~/.cache/gan_accel/images); 'none' decodes in memory or on the fly instead.",
        },
    )
    dataloader_num_workers: int = field(
        default=2,
        metadata={
            "resume": FREE,
            "help": "DataLoader worker processes of the streaming path (0: in the training process).",
        },
    )
    data_decode_workers: Optional[int] = field(
        default=None,
        metadata={
            "resume": FREE,
            "help": "Processes that build the decode cache (default: one per CPU core; 0: in the training process).",
        },
    )

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("data_in_memory", self.data_in_memory, IN_MEMORY)
        if self.dataset_name:
            if self.dataset not in ("digits", "hub"):  # digits: the default, i.e. not given
                raise ConfigError(f"--dataset_name loads a Hugging Face dataset; drop --dataset {self.dataset}")
            self.dataset = "hub"
        elif self.dataset == "hub":
            raise ConfigError("--dataset hub needs --dataset_name NAME (a Hugging Face dataset)")
        check_positive("max_data_memory_mb", self.max_data_memory_mb)
        check_positive("dataloader_num_workers", self.dataloader_num_workers, allow_zero=True)
        check_positive("data_decode_workers", self.data_decode_workers, allow_zero=True)
        if self.channels not in (1, 3):
            raise ConfigError(f"--channels must be 1 or 3; got {self.channels}")
        check_positive("image_size", self.image_size)
