"""Image datasets through Hugging Face ``datasets`` (the optional ``hub`` extra).

``--dataset imagefolder --data_dir PATH`` reads a local folder with ``datasets``' own
``imagefolder`` builder (offline; class labels from sub-folder names); ``--dataset_name NAME``
loads a Hub dataset (or a local dataset script/folder) by name. Labels come from the ``label``
column when it is a ``ClassLabel``; the images from the first ``Image`` column. ``datasets`` keeps
the encoded files in its Arrow cache; the pixels are then decoded like every other source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ..errors import UserError


@dataclass
class HFTable:
    table: object  # datasets.Dataset
    image_column: str
    labels: Optional[List[int]]
    class_names: List[str]
    name: str
    fingerprint: str  # changes when the underlying files do


def _require_datasets():
    try:
        import datasets
    except ImportError:
        raise UserError(
            "--dataset imagefolder / --dataset_name need the optional `datasets` package: pip install 'gan_accel[hub]'"
        ) from None
    return datasets


def load_hf_table(dataset: str, data_dir: Optional[str], dataset_name: Optional[str], split: str) -> HFTable:
    datasets = _require_datasets()
    if dataset_name:
        flag, call = f"--dataset_name {dataset_name}", dict(path=dataset_name, split=split)
        if data_dir:
            call["data_dir"] = data_dir
    else:
        if not data_dir:
            raise UserError(
                "--dataset imagefolder needs --data_dir PATH (a folder of images, optionally one sub-folder per class)"
            )
        flag, call = f"--data_dir {data_dir}", dict(path="imagefolder", data_dir=data_dir, split=split)
    try:
        table = datasets.load_dataset(**call)
    except (FileNotFoundError, ValueError, ConnectionError, OSError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UserError(
            f"{flag}: could not load it with `datasets` ({detail}); check the name, --dataset_split and the network"
        ) from None
    columns = [name for name, feature in table.features.items() if isinstance(feature, datasets.Image)]
    if not columns:
        raise UserError(f"{flag}: no image column (features: {', '.join(table.features)})")
    label_feature = table.features.get("label")
    labels = None
    class_names = []
    if isinstance(label_feature, datasets.ClassLabel):
        labels = list(table["label"])
        class_names = list(label_feature.names)
    return HFTable(
        table,
        columns[0],
        labels,
        class_names,
        name=f"hf:{dataset_name or 'imagefolder:' + str(data_dir)}",
        fingerprint=table._fingerprint,
    )
