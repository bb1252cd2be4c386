"""Batching of the classifier path: length-grouped training batches by default (--no_group_by_length
restores plain shuffling), longest-first evaluation, dynamic padding to the batch's longest text,
rounded up by --pad_to_multiple_of (8 by default on a GPU only)."""

import pytest

from classifier_fixtures import make_tiny, write_rows  # noqa: E402
from gan_accel.classifier import CLASSIFIER_CONFIG_TYPES  # noqa: E402
from gan_accel.classifier.config import ClassifierDataArguments  # noqa: E402
from gan_accel.config import RunArguments, parse_config  # noqa: E402
from gan_accel.data import ResumableSampler  # noqa: E402
from gan_accel.data.length_grouped import LengthGroupedSampler  # noqa: E402
from gan_accel.errors import ConfigError  # noqa: E402


def data_args(tmp_path, *extra):
    argv = [
        "--train_file",
        str(tmp_path / "t.csv"),
        "--validation_file",
        str(tmp_path / "v.csv"),
        "--output_dir",
        str(tmp_path / "out"),
        *extra,
    ]
    return parse_config((*CLASSIFIER_CONFIG_TYPES, RunArguments), argv)[0]


def test_group_by_length_is_on_by_default_and_can_be_turned_off(tmp_path):
    assert data_args(tmp_path).group_by_length is True
    assert data_args(tmp_path, "--no_group_by_length").group_by_length is False
    assert data_args(tmp_path, "--group_by_length", "false").group_by_length is False


def test_pad_to_multiple_of_defaults_to_8_on_gpu_only(tmp_path):
    args = data_args(tmp_path)
    assert args.padding_multiple("cuda") == 8 and args.padding_multiple("cpu") is None
    assert data_args(tmp_path, "--pad_to_multiple_of", "16").padding_multiple("cpu") == 16
    assert data_args(tmp_path, "--pad_to_multiple_of", "1").padding_multiple("cuda") is None
    with pytest.raises(ConfigError, match="--pad_to_multiple_of"):
        ClassifierDataArguments(train_file="t.csv", validation_file="v.csv", pad_to_multiple_of=0)


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    from gan_accel.classifier.config import ClassifierModelArguments
    from gan_accel.classifier.data import encode_data, read_labelled_rows
    from gan_accel.classifier.model import load_tokenizer

    folder = tmp_path_factory.mktemp("batching")
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    rows = [
        {"text": " ".join(words[(i + k) % 8] for k in range(1 + (i * 7) % 40)), "label": "ab"[i % 2]}
        for i in range(96)
    ]
    write_rows(folder / "t.csv", rows)
    write_rows(folder / "v.csv", rows[:21])
    tiny = make_tiny(folder / "tiny", folder / "t.csv")
    args = ClassifierDataArguments(
        train_file=str(folder / "t.csv"), validation_file=str(folder / "v.csv"), max_length=64
    )
    tokenizer = load_tokenizer(ClassifierModelArguments(model_name_or_path=str(tiny)))
    return encode_data(read_labelled_rows(args), args, tokenizer), tokenizer


@pytest.mark.parametrize("group_by_length", [True, False])
@pytest.mark.parametrize("multiple", [None, 8])
def test_batches_pad_to_their_longest_text(encoded, group_by_length, multiple):
    from gan_accel.classifier.data import build_dataloaders, text_lengths

    data, tokenizer = encoded
    train_dl, eval_dl, sampler = build_dataloaders(
        data, tokenizer, 8, 16, seed=0, group_by_length=group_by_length, pad_to_multiple_of=multiple
    )
    assert isinstance(sampler, LengthGroupedSampler) == group_by_length and isinstance(sampler, ResumableSampler)
    lengths = text_lengths(data.train)
    order = list(sampler)
    for k, batch in enumerate(train_dl):
        longest = max(lengths[i] for i in order[8 * k : 8 * k + 8])
        width = batch["input_ids"].shape[1]
        assert width == (longest if multiple is None else -(-longest // 8) * 8)
        assert batch["attention_mask"].sum(dim=1).max() == longest
    eval_lengths = [int(b["attention_mask"].sum(dim=1).max()) for b in eval_dl]
    assert eval_lengths == sorted(eval_lengths, reverse=True)  # longest first
    assert sum(len(b["labels"]) for b in eval_dl) == 21


def test_grouped_batches_hold_close_lengths(encoded):
    from gan_accel.classifier.data import build_dataloaders

    data, tokenizer = encoded
    grouped, _, _ = build_dataloaders(data, tokenizer, 8, 16, seed=0, group_by_length=True)
    plain, _, _ = build_dataloaders(data, tokenizer, 8, 16, seed=0, group_by_length=False)

    def pad_share(dl):
        masks = [b["attention_mask"] for b in dl]
        return 1 - sum(int(m.sum()) for m in masks) / sum(m.numel() for m in masks)

    assert pad_share(grouped) < 0.5 * pad_share(plain)


@pytest.mark.parametrize(
    "extra, grouped", [((), True), (("--no_group_by_length", "--pad_to_multiple_of", "8"), False)]
)
def test_the_engine_trains_on_the_flags_batches(tmp_path, extra, grouped):
    """ClassifierTrainer hands the engine the sampler and padding the flags ask for: length-grouped
    batches by default (the engine positions that sampler on resume), plain shuffling with
    --no_group_by_length; evaluation longest first either way."""
    from classifier_fixtures import make_corpus, reset_accelerate, train_argv
    from gan_accel.classifier.train import ClassifierTrainer

    corpus = make_corpus(tmp_path / "data", n_train=64, n_val=24)
    tiny = make_tiny(tmp_path / "tiny", corpus["train"])
    reset_accelerate()
    configs = parse_config(
        (*CLASSIFIER_CONFIG_TYPES, RunArguments),
        train_argv(corpus, tiny, tmp_path / "out", "--max_steps", "2", "--batch_size", "8", *extra),
    )
    trainer = ClassifierTrainer(*configs)
    try:
        assert isinstance(trainer.engine.sampler, LengthGroupedSampler) == grouped
        assert isinstance(trainer.engine.sampler, ResumableSampler)
        widths = [b["input_ids"].shape[1] for b in trainer.engine.loader]
        if "--pad_to_multiple_of" in extra:
            assert all(w % 8 == 0 for w in widths) and widths
        eval_widths = [int(b["attention_mask"].sum(dim=1).max()) for b in trainer.engine.eval_loaders[0]]
        assert eval_widths == sorted(eval_widths, reverse=True)
    finally:
        trainer.run.finish()
