"""Loading the teacher and the student, and refusing a pair that cannot be distilled.

Both are loaded (and checked) before the run folder is touched, so a wrong label set or a
tokenizer with another vocabulary stops with one line and leaves nothing behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

import torch

from ...errors import UserError
from ..model import check_max_length, check_tokenizer
from .config import DistillModelArguments
from .student import layer_map, student_from_teacher


def _load(flag: str, name: str, what: str, load: Callable[[], Any]) -> Any:
    try:
        loaded = load()
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(
            f"--{flag} {name}: could not load its {what} ({first}); pass a local folder written by "
            "save_pretrained (a Hub name must already be in the Hugging Face cache offline)"
        ) from None
    if what == "tokenizer":
        check_tokenizer(flag, name, loaded)
    return loaded


def teacher_label_names(config) -> List[str]:
    return [str(config.id2label[i]) for i in range(config.num_labels)]


def check_labels(teacher_config, label_names: List[str], teacher_path: str) -> None:
    """The teacher's classes must be the data's, in the same class-id order: its logit k is
    read as the probability of class k."""
    theirs = teacher_label_names(teacher_config)
    if theirs == list(label_names):
        return
    if sorted(theirs) == sorted(label_names):
        raise UserError(
            f"--teacher_model_name_or_path {teacher_path}: its labels {theirs} are the data's in another "
            f"order ({list(label_names)}); pass --label_names {' '.join(theirs)}"
        )
    raise UserError(
        f"--teacher_model_name_or_path {teacher_path}: its labels {theirs} differ from the data's "
        f"{list(label_names)}; distil a teacher fine-tuned on this label set (or fix --label_names)"
    )


def check_vocabulary(teacher_tokenizer, student_tokenizer, student_path: str) -> None:
    """Teacher and student read the same token ids, so their vocabularies must be identical."""
    t = teacher_tokenizer.get_vocab()
    s = student_tokenizer.get_vocab()
    if t == s:
        return
    differ = len(set(t.items()) ^ set(s.items()))
    raise UserError(
        f"--student_model_name_or_path {student_path}: its tokenizer vocabulary ({len(s)} tokens) is not "
        f"the teacher's ({len(t)} tokens; {differ} entries differ); both read the same token ids: use a "
        "student with the teacher's tokenizer, or --student_from_teacher"
    )


@dataclass
class TeacherAndStudent:
    teacher: torch.nn.Module
    student: torch.nn.Module
    tokenizer: Any  # the teacher's: tokenises the data and is saved with the student


def load_teacher(args: DistillModelArguments, label_names: List[str]):
    """``(teacher, tokenizer)``, frozen (eval mode, no parameter requires grad). The label set is
    checked on the config, before the weights are read."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    path = args.teacher_model_name_or_path
    flag = "teacher_model_name_or_path"
    tokenizer = _load(flag, path, "tokenizer", lambda: AutoTokenizer.from_pretrained(path))
    config = _load(flag, path, "config", lambda: AutoConfig.from_pretrained(path))
    check_labels(config, label_names, path)
    if args.student_from_teacher:
        layer_map(config.num_hidden_layers, student_depth(args, config))  # a depth error before any weights load
    teacher = _load(flag, path, "model", lambda: AutoModelForSequenceClassification.from_pretrained(path))
    teacher.eval().requires_grad_(False)
    return teacher, tokenizer


def student_depth(args: DistillModelArguments, teacher_config) -> int:
    return args.student_layers or (teacher_config.num_hidden_layers + 1) // 2


def load_student(args: DistillModelArguments, teacher, label_names: List[str]):
    """The student, with the data's labels; a checkpoint with another head gets a fresh one (drawn
    from the seeded global RNG)."""
    from transformers import AutoModelForSequenceClassification

    if args.student_from_teacher:
        student = student_from_teacher(teacher, student_depth(args, teacher.config))
    else:
        path = args.student_model_name_or_path
        flag = "student_model_name_or_path"
        student = _load(
            flag,
            path,
            "model",
            lambda: AutoModelForSequenceClassification.from_pretrained(
                path,
                num_labels=len(label_names),
                id2label=dict(enumerate(label_names)),
                label2id={name: i for i, name in enumerate(label_names)},
                ignore_mismatched_sizes=True,
            ),
        )
    if args.gradient_checkpointing:
        # Non-reentrant checkpointing works under DDP (transformers 5 renamed the method).
        enable = getattr(student, "activation_checkpointing_enable", None)
        kwargs = {"use_reentrant": False}
        if enable is not None:
            enable(activation_checkpointing_kwargs=kwargs)
        else:
            student.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    student.train()
    return student


def load_networks(
    args: DistillModelArguments,
    label_names: List[str],
    alpha_cos: float = 0.0,
    max_length: Optional[int] = None,
    pair: bool = False,
) -> TeacherAndStudent:
    """Teacher and student, every check done on tokenizers and configs before weights are read
    (loading weights prints progress bars: an error must stay one line). ``max_length``: the
    data's ``--max_length``, checked against the tokenizer and both models' position embeddings."""
    from transformers import AutoConfig, AutoTokenizer

    def tokenizer_of(flag: str, path: str):
        return _load(flag, path, "tokenizer", lambda: AutoTokenizer.from_pretrained(path))

    def config_of(flag: str, path: str):
        return _load(flag, path, "config", lambda: AutoConfig.from_pretrained(path))

    teacher_tokenizer = tokenizer_of("teacher_model_name_or_path", args.teacher_model_name_or_path)
    configs = [config_of("teacher_model_name_or_path", args.teacher_model_name_or_path)]
    if args.student_model_name_or_path:
        path = args.student_model_name_or_path
        check_vocabulary(teacher_tokenizer, tokenizer_of("student_model_name_or_path", path), path)
        configs.append(config_of("student_model_name_or_path", path))
        check_widths(configs[0], configs[1], alpha_cos)
    if max_length is not None:  # a --student_from_teacher student has the teacher's positions
        check_max_length(max_length, teacher_tokenizer, configs, pair=pair)
    teacher, tokenizer = load_teacher(args, label_names)
    return TeacherAndStudent(teacher, load_student(args, teacher, label_names), tokenizer)


def hidden_width(config) -> int:
    return getattr(config, "dim", None) or config.hidden_size


def check_widths(teacher_config, student_config, alpha_cos: float) -> None:
    """The cosine loss compares hidden states coordinate by coordinate: widths must match."""
    t = hidden_width(teacher_config)
    s = hidden_width(student_config)
    if alpha_cos > 0 and t != s:
        raise UserError(
            f"--alpha_cos {alpha_cos}: the student's hidden width ({s}) is not the teacher's ({t}); "
            "use --alpha_cos 0 or a student of the teacher's width"
        )
