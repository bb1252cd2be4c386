"""Classifier path, pure pieces: config validation, file reading, labels, schedule sizing,
optimizer groups, clear errors for missing packages and uncached models."""

import importlib.util
import math

import pytest
import torch

from classifier_fixtures import set_offline, write_rows
from gan_accel.classifier.config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments
from gan_accel.classifier.data import encode_labels, label_names_from, load_hub_splits, read_table
from gan_accel.classifier.model import build_optimizer, load_tokenizer, schedule_length
from gan_accel.engine import build_scheduler
from gan_accel.errors import ConfigError, UserError


def data_args(**kw):
    base = {"train_file": "t.csv", "validation_file": "v.jsonl"}
    return ClassifierDataArguments(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, flag",
    [
        ({"validation_file": None}, "--validation_file"),
        ({"train_file": "t.parquet"}, "--train_file"),
        ({"dataset_name": "glue"}, "--train_file"),
        ({"max_length": 0}, "--max_length"),
        ({"label_names": ["a"]}, "--label_names"),
        ({"label_column": ""}, "--label_column"),
    ],
)
def test_data_arguments_name_the_flag(kw, flag):
    with pytest.raises(ConfigError, match=flag):
        data_args(**kw)


@pytest.mark.parametrize(
    "kw, flag",
    [
        ({"optimizer": "sgd"}, "--optimizer"),
        ({"learning_rate": 0}, "--learning_rate"),
        ({"warmup_ratio": 1.0}, "--warmup_ratio"),
        ({"batch_size": 0}, "--batch_size"),
        ({"metric_for_best_model": "auc"}, "--metric_for_best_model"),
        ({"max_steps": 0}, "--max_steps"),
        ({"local_sgd_steps": -1}, "--local_sgd_steps"),
        ({"warmup_steps": -1}, "--warmup_steps"),
    ],
)
def test_train_arguments_name_the_flag(kw, flag):
    with pytest.raises(ConfigError, match=flag):
        ClassifierTrainArguments(**kw)


def test_model_default_is_the_course_model():
    assert ClassifierModelArguments().model_name_or_path == "distilbert-base-cased"
    assert ClassifierTrainArguments().optimizer == "adam" and ClassifierTrainArguments().warmup_ratio == 0.1


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_read_table_formats(tmp_path, suffix):
    rows = [{"text": "a, b\tc", "label": "x"}, {"text": "d", "label": "y"}]
    assert read_table(str(write_rows(tmp_path / f"f{suffix}", rows))) == rows


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty"),
        ("text,label\n", "no examples"),
        ("{not json\n", "line 1 is not JSON"),
    ],
)
def test_read_table_clear_errors(tmp_path, content, message):
    path = tmp_path / ("f.jsonl" if "{" in content else "f.csv")
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        read_table(str(path), "train_file")
    with pytest.raises(UserError, match="not found"):
        read_table(str(tmp_path / "missing.csv"))


def test_read_table_unreadable_bytes(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"text,label\n\xff\xfe\x00bad,1\n")
    with pytest.raises(UserError, match="unreadable"):
        read_table(str(path), "train_file")


def test_label_names_sorted_numerically_when_integers_and_json_ints_match_csv_strings():
    assert label_names_from(["10", "2", 1, "1"]) == ["1", "2", "10"]
    assert label_names_from(["pos", "neg", "neg"]) == ["neg", "pos"]
    label2id = {"1": 0, "2": 1, "10": 2}
    assert encode_labels([{"l": 10}, {"l": "2"}, {"l": 1.0}], "l", label2id, "src") == [2, 1, 0]
    with pytest.raises(UserError, match=r"example 2 has label '3', not among the training labels"):
        encode_labels([{"l": 1}, {"l": 3}], "l", label2id, "--validation_file v.csv")


@pytest.mark.parametrize(
    "batches, procs, accum, epochs, updates_per_epoch",
    [
        (30, 1, 1, 3, 30),
        (30, 2, 1, 3, 15),
        (31, 2, 1, 1, 16),
        (30, 2, 2, 2, 8),
        (29, 1, 4, 1, 8),
    ],
)
def test_schedule_length_counts_updates_of_one_process(batches, procs, accum, epochs, updates_per_epoch):
    length = schedule_length(batches, procs, ClassifierTrainArguments(num_train_epochs=epochs), accum)
    assert length.updates_per_epoch == updates_per_epoch
    assert length.total_updates == updates_per_epoch * epochs
    # Accelerate steps the prepared scheduler num_processes times per update: the engine's
    # scheduler ends after total_updates x procs ticks, at least the unsharded single-process count.
    ticks = length.total_updates * procs
    assert ticks >= math.ceil(batches / accum) * epochs
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(length.lr_schedule(), opt, num_processes=procs)
    lrs = [(opt.step(), sched.step(), sched.get_last_lr()[0])[-1] for _ in range(ticks)]
    assert lrs[-1] == 0.0 and lrs[-2] > 0.0
    assert length.warmup_updates == math.ceil(0.1 * length.total_updates)


def test_schedule_max_steps_and_explicit_warmup():
    length = schedule_length(100, 1, ClassifierTrainArguments(max_steps=40, warmup_steps=5), 1)
    assert (length.total_updates, length.warmup_updates) == (40, 5)
    with pytest.raises(UserError, match="--warmup_steps"):
        schedule_length(100, 1, ClassifierTrainArguments(max_steps=4, warmup_steps=5), 1)


def test_linear_schedule_reaches_zero_exactly_at_the_last_update():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=1.0)
    length = schedule_length(10, 1, ClassifierTrainArguments(num_train_epochs=2, learning_rate=1.0), 1)
    sched = build_scheduler(length.lr_schedule(), opt, num_processes=1)
    lrs = []
    for _ in range(length.total_updates):
        opt.step(), sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs[length.warmup_updates - 1] == pytest.approx(1.0)
    assert lrs[-1] == 0.0 and lrs[-2] > 0.0


@pytest.mark.parametrize("name, cls", [("adam", torch.optim.Adam), ("adamw", torch.optim.AdamW), ("adafactor", None)])
def test_optimizer_no_decay_on_bias_and_layernorm(name, cls):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    opt = build_optimizer(model, ClassifierTrainArguments(optimizer=name, weight_decay=0.01))
    if cls is not None:
        assert type(opt) is cls
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert [p.shape for p in decay["params"]] == [torch.Size([4, 4])]
    assert len(no_decay["params"]) == 3  # Linear bias, LayerNorm weight and bias


@pytest.mark.skipif(importlib.util.find_spec("datasets") is not None, reason="datasets is installed")
def test_dataset_name_without_datasets_package_says_how_to_install():
    with pytest.raises(UserError, match=r"pip install 'gan_accel\[hub\]'"):
        load_hub_splits("glue", "sst2")


def test_uncached_hub_name_offline_says_how_to_use_a_local_folder(monkeypatch):
    import huggingface_hub.constants

    set_offline()
    # huggingface_hub reads HF_HUB_OFFLINE at import time, maybe before this module set it.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(UserError, match="local folder written by save_pretrained") as err:
        load_tokenizer(ClassifierModelArguments(model_name_or_path="gan-accel-tests/never-cached-model"))
    assert "\n" not in str(err.value)


def test_old_flag_spellings_still_work_on_the_command_line_in_files_and_on_resume(tmp_path):
    from gan_accel.classifier import CLASSIFIER_CONFIG_TYPES
    from gan_accel.config import RunArguments, parse_config, resume_incompatibilities, resume_policy

    types = (*CLASSIFIER_CONFIG_TYPES, RunArguments)
    base = ["--train_file", "t.csv", "--validation_file", "v.csv", "--output_dir", str(tmp_path / "out")]
    train = parse_config(types, [*base, "--eval_steps", "5", "--num_warmup_steps", "3"])[2]
    assert (train.eval_every, train.warmup_steps) == (5, 3)
    (tmp_path / "old.yaml").write_text("eval_steps: 9\nnum_warmup_steps: 4\n")
    train = parse_config(types, [*base, "--config", str(tmp_path / "old.yaml")])[2]
    assert (train.eval_every, train.warmup_steps) == (9, 4)
    # A checkpoint written before the rename records the old names: not a difference.
    assert (
        resume_incompatibilities(
            {"num_warmup_steps": 4, "eval_steps": 9}, {"warmup_steps": 4, "eval_every": 9}, resume_policy(*types)
        )
        == []
    )


# ---- issue 11: files as spreadsheets and exports write them; divergence --------------------------
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_utf8_bom_is_not_part_of_the_first_column(tmp_path, suffix):
    path = write_rows(tmp_path / f"f{suffix}", [{"text": "a", "label": "x"}, {"text": "b", "label": "y"}])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # what Excel's "CSV UTF-8" writes
    rows = read_table(str(path), "train_file")
    assert list(rows[0]) == ["text", "label"] and rows[0]["text"] == "a"


def test_quoted_fields_on_one_line_still_parse_and_rows_know_their_lines(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text('text,label\n"a, quoted ""text""",x\n\nb,y\n')
    rows = read_table(str(path), "train_file")
    assert rows == [{"text": 'a, quoted "text"', "label": "x"}, {"text": "b", "label": "y"}]
    assert rows.lines == [2, 4]


def test_empty_texts_are_counted_in_a_warning(tmp_path, caplog):
    import logging

    from gan_accel.classifier.data import read_labelled_rows

    train = tmp_path / "t.jsonl"
    train.write_text(
        '{"text": "a", "label": "x"}\n{"text": "", "label": "y"}\n{"text": null, "label": "x"}\n'
        '{"text": "  ", "label": "y"}\n'
    )
    with caplog.at_level(logging.WARNING):
        raw = read_labelled_rows(data_args(train_file=str(train), validation_file=str(train)))
    assert raw.labels["train"] == [0, 1, 0, 1]
    assert f"--train_file {train}: 3 of 4 examples have an empty text (line 2, line 3, line 4)" in caplog.text


class _State:
    best_metric = float("nan")
    step = 3


@pytest.mark.parametrize(
    "metrics",
    [
        {
            "eval/accuracy": 0.5,
            "eval/loss": float("nan"),
        },  # what --learning_rate 1e10 scored: NaN loss, finite accuracy
        {"eval/accuracy": float("nan"), "eval/loss": 0.1},
    ],
)
def test_a_non_finite_evaluation_never_becomes_best(tmp_path, metrics):
    from accelerate import Accelerator

    from gan_accel.classifier.evaluate import best_model_keeper

    keeper = best_model_keeper(
        Accelerator(cpu=True), _State(), torch.nn.Linear(2, 2), None, tmp_path / "model", "accuracy", True
    )
    assert not keeper.update(metrics)
    assert not (tmp_path / "model").exists() and math.isnan(keeper.state.best_metric)
    assert not keeper.improved(float("nan")) and not keeper.improved(float("inf"))


def test_export_refuses_non_finite_weights_and_keeps_the_previous_model(tmp_path):
    from gan_accel.classifier.model import export_model
    from gan_accel.loop.guard import NonFiniteError

    out = tmp_path / "model"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"the previous, finite model")
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight[0, 0] = float("nan")
    with pytest.raises(NonFiniteError, match=f"refusing to export {out}: the model's weights are not finite"):
        export_model(model, None, out)
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    assert (out / "model.safetensors").read_bytes() == b"the previous, finite model"


@pytest.mark.parametrize(
    "kw",
    [
        {"learning_rate": float("nan")},
        {"learning_rate": float("inf")},
        {"weight_decay": float("nan")},
        {"max_grad_norm": float("nan")},
        {"warmup_ratio": float("nan")},
        {"warmup_steps": 10, "max_steps": 10},
    ],
)
def test_non_finite_and_inconsistent_train_arguments(kw):
    with pytest.raises(ConfigError, match="--" + next(iter(kw))):
        ClassifierTrainArguments(**kw)


def test_json_lines_keep_unicode_line_separators_inside_strings(tmp_path):
    path = tmp_path / "f.jsonl"
    # A raw U+2028 inside a JSON string is valid JSON (json.dumps(..., ensure_ascii=False) writes it).
    path.write_text('{"text": "a\u2028b", "label": "x"}\n{"text": "c", "label": "y"}\n', encoding="utf-8")
    rows = read_table(str(path), "train_file")
    assert [r["text"] for r in rows] == ["a\u2028b", "c"] and rows.lines == [1, 2]


class _Tokenizer:
    """What check_max_length and check_tokenizer read from a tokenizer: its special tokens and limit."""

    def __init__(self, model_max_length=int(1e30), vocab=100, special=(0, 1, 2)):
        self.model_max_length = model_max_length
        self.vocab = vocab
        self.all_special_ids = list(special)

    def __len__(self):
        return self.vocab

    def num_special_tokens_to_add(self, pair=False):
        return 3 if pair else 2


def test_max_length_is_checked_against_special_tokens_positions_and_tokenizer_limit():
    from types import SimpleNamespace

    from gan_accel.classifier.model import check_max_length

    bert = SimpleNamespace(max_position_embeddings=512)
    gpt2 = SimpleNamespace(n_positions=64)
    assert check_max_length(3, _Tokenizer(), [bert]) == 3
    assert check_max_length(None, _Tokenizer(), [bert]) == 512  # None: the model's limit
    assert check_max_length(None, _Tokenizer(), [SimpleNamespace()]) is None  # nothing bounds it
    with pytest.raises(UserError, match="--max_length 2 leaves no room for text: .* 2 special tokens"):
        check_max_length(2, _Tokenizer(), [bert])
    with pytest.raises(UserError, match="3 special tokens to each pair; use at least 5"):
        check_max_length(4, _Tokenizer(), [bert], pair=True)
    with pytest.raises(UserError, match="--max_length 513 is longer than the model can read .512"):
        check_max_length(513, _Tokenizer(), [bert])
    # Teacher and student: the shorter one bounds it; RoBERTa-style: the tokenizer's limit is tighter.
    with pytest.raises(UserError, match=r"model can read \(64"):
        check_max_length(100, _Tokenizer(), [bert, gpt2])
    with pytest.raises(UserError, match=r"model can read \(510"):
        check_max_length(512, _Tokenizer(model_max_length=510), [bert])


def test_a_tokenizer_of_special_tokens_only_is_refused(tmp_path):
    from gan_accel.classifier.model import check_tokenizer

    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    check_tokenizer("model", str(tmp_path), _Tokenizer())
    with pytest.raises(UserError, match="a tokenizer of 3 special tokens only"):
        check_tokenizer("model", "some/hub-name", _Tokenizer(vocab=3))
    (tmp_path / "vocab.txt").unlink()
    with pytest.raises(UserError, match=f"--model {tmp_path}: no tokenizer files"):
        check_tokenizer("model", str(tmp_path), _Tokenizer())
