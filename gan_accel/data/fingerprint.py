"""What a run trained on, recorded in every checkpoint so that a resume on other data is noticed.

A fingerprint is a JSON dict of named parts (``{"data_dir": ...}``, ``{"trainA": ..., "trainB":
...}``, ``{"train_file": ..., "validation_file": ...}``), each one of:

- a folder of images: its class sub-folders and every image's relative path, size and a hash of
  its bytes (``content.py``: a copy that keeps size and modification time while the pixels change
  is a change; a ``touch`` or a copy without ``-p`` is not). Fingerprints written before recorded
  the modification time instead of the hash: against those, only the sizes are compared;
- a file (the classifier's tables): its size and the SHA-256 of its bytes, so a copy or a
  ``touch`` with the same content is not a change;
- a dataset that comes whole (digits, MNIST, a Hub dataset): its name, number of examples, shape
  and class names.

:func:`describe_changes` says what differs between two fingerprints in words a user can act on
("class 'cat' removed, class 'kitten' added", "3 images added: a.png, ..."). The functions at the
end build the fingerprint of each task's data from its (duck-typed) data arguments.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .content import content_digests

# File names quoted per kind of change in a message; the rest are counted.
NAMES_SHOWN = 3
FOLDER_DATASETS = ("folder", "imagefolder")


# ---- parts -----------------------------------------------------------------------------------
def folder_part(
    root: Path, files: Sequence[Path], class_names: Sequence[str], known: Optional[Dict[str, str]] = None
) -> dict:
    """A folder of images as the loader listed it (``files`` under ``root``, ``class_names``).
    ``known``: content hashes already computed (str path -> hash), e.g. for the decode cache's key."""
    root = Path(root)
    known = known or {}
    missing = [file for file in files if str(file) not in known]
    known = {**known, **dict(zip(map(str, missing), content_digests(missing)))}
    entries = {}
    for file in files:
        entries[Path(file).relative_to(root).as_posix()] = [Path(file).stat().st_size, known[str(file)]]
    return {"kind": "folder", "path": str(root), "classes": list(class_names), "files": entries}


def file_part(path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return {"kind": "file", "path": str(path), "size": Path(path).stat().st_size, "sha256": digest.hexdigest()}


def dataset_part(name: str, size: int, shape: Sequence[int], class_names: Sequence[str]) -> dict:
    return {
        "kind": "dataset",
        "name": name,
        "size": int(size),
        "shape": [int(s) for s in shape],
        "classes": list(class_names),
    }


# ---- comparing ---------------------------------------------------------------------------------
def _some(names: List[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (", ..." if len(names) > NAMES_SHOWN else "")


def _class_changes(saved: List[str], current: List[str]) -> List[str]:
    if saved == current:
        return []
    removed = [name for name in saved if name not in current]
    added = [name for name in current if name not in saved]
    words = [f"class {name!r} removed" for name in removed] + [f"class {name!r} added" for name in added]
    if not words:
        words = [f"classes reordered {saved} -> {current}"]
    return [", ".join(words) + " (class ids shift)"]


def _folder_changes(saved: dict, current: dict) -> List[str]:
    changes = _class_changes(saved.get("classes", []), current.get("classes", []))
    old = saved.get("files", {})
    new = current.get("files", {})
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    modified = sorted(name for name in set(old) & set(new) if _file_changed(old[name], new[name]))
    for names, what in ((added, "added"), (removed, "removed"), (modified, "changed (other content)")):
        if names:
            changes.append(f"{len(names)} image{'s' if len(names) > 1 else ''} {what}: {_some(names)}")
    return changes


def _file_changed(saved: list, current: list) -> bool:
    """``[size, content hash]``; a fingerprint written before content hashes holds ``[size,
    mtime_ns]`` (an int), which says nothing of the content: then only the sizes are compared."""
    if not isinstance(saved[1], str):
        return saved[0] != current[0]
    return list(saved) != list(current)


def _part_changes(saved: dict, current: dict) -> List[str]:
    if saved.get("kind") != current.get("kind"):
        return [f"was a {saved.get('kind')}, now a {current.get('kind')}"]
    kind = current["kind"]
    if kind == "folder":
        return _folder_changes(saved, current)
    if kind == "file":
        if saved.get("sha256") == current.get("sha256"):
            return []
        return [f"{current['path']} changed ({saved.get('size')} -> {current['size']} bytes, other content)"]
    changes = [
        f"{key} {saved.get(key)} -> {current.get(key)}"
        for key in ("name", "size", "shape")
        if saved.get(key) != current.get(key)
    ]
    return changes + _class_changes(saved.get("classes", []), current.get("classes", []))


def describe_changes(saved: Dict[str, dict], current: Dict[str, dict]) -> List[str]:
    """What differs between the fingerprint in a checkpoint and this run's, one phrase per part
    (``"data_dir: class 'b' removed, ...; 2 images added: x.png, y.png"``); empty when equal."""
    changes = []
    for name in sorted(set(saved) | set(current)):
        if name not in current or name not in saved:
            changes.append(f"{name}: {'no longer given' if name not in current else 'new'}")
            continue
        found = _part_changes(saved[name], current[name])
        if found:
            changes.append(f"{name}: {'; '.join(found)}")
    return changes


# ---- the data of each task -------------------------------------------------------------------
def image_fingerprint(data_args, source) -> Dict[str, dict]:
    """The GAN's data: the image folder as listed, or a dataset's name, size, shape and classes."""
    if data_args.dataset in FOLDER_DATASETS and data_args.data_dir and not getattr(data_args, "dataset_name", None):
        from .images import folder_files

        root, files, _, class_names = folder_files(data_args.data_dir)
        return {"data_dir": folder_part(root, files, class_names, getattr(source, "file_digests", None))}
    return {"dataset": dataset_part(source.name, len(source), source.shape, source.class_names)}


def domains_fingerprint(data_args, domains) -> Dict[str, dict]:
    """CycleGAN's two training domains (the test folders only evaluate)."""
    if data_args.dataset != "folder":
        pairs = (("A", domains.train_a), ("B", domains.train_b))
        return {
            name: dataset_part(
                f"{data_args.dataset}:{name}", len(data), tuple(data.images.shape[1:]), data.class_names
            )
            for name, data in pairs
        }
    from .images import folder_files

    parts = {}
    for name in ("trainA", "trainB"):
        root, files, _, class_names = folder_files(str(Path(data_args.data_dir) / name))
        parts[name] = folder_part(root, files, class_names)
    return parts


def table_fingerprint(data_args, raw) -> Dict[str, dict]:
    """The classifier's (and distillation's) labelled texts: both files, or the Hub dataset's
    name, row counts and label names."""
    if data_args.train_file:
        return {flag: file_part(Path(getattr(data_args, flag))) for flag in ("train_file", "validation_file")}
    name = data_args.dataset_name + (f"/{data_args.dataset_config}" if data_args.dataset_config else "")
    return {f"dataset {split}": dataset_part(name, len(rows), (), raw.label_names) for split, rows in raw.rows.items()}
