"""The classifier loop computes what ``transformers.Trainer`` computes, step for step.

Given the same weights (the same seeded new head), the same batches in the same order (Trainer
is handed the toolkit's length-grouped sampler) and dropout off (the one random draw the two
loops take differently), the training loss of every update is the same: the optimizer (fused
Adam vs AdamW with weight decay 0), warm-up and linear decay, clipping at 1.0 and the scheduler's
stepping agree. So a difference in final accuracy between the two in the benchmark comes from
the batch order and dropout's draws, not from the loop.
"""

import pytest
import torch

from classifier_fixtures import make_corpus, make_tiny, reset_accelerate, single_thread  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)

EPOCHS, BATCH, LR, WARMUP = 2, 16, 1e-3, 0.25


def recording_loader(losses: list, models: list):
    """``load_model`` with dropout off, every training forward's loss appended to ``losses`` and
    ``(model, its initial weights)`` to ``models``."""
    from gan_accel.classifier.model import load_model

    def load(*args, **kwargs):
        model = load_model(*args, **kwargs)
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        model.register_forward_hook(
            lambda mod, inp, out: losses.append(out.loss.item()) if mod.training and out.loss is not None else None
        )
        models.append((model, {k: v.detach().clone() for k, v in model.state_dict().items()}))
        return model

    return load


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    corpus = make_corpus(tmp_path_factory.mktemp("corpus"), n_train=120, n_val=24)  # 8 batches: the last short
    return corpus, make_tiny(tmp_path_factory.mktemp("tiny"), corpus["train"])


def run_toolkit(corpus, model_dir, out, losses, models, monkeypatch):
    import gan_accel.classifier.train as train_module
    from gan_accel.classifier.config import ClassifierDataArguments, ClassifierModelArguments, ClassifierTrainArguments
    from gan_accel.config import RunArguments

    reset_accelerate()
    monkeypatch.setattr(train_module, "load_model", recording_loader(losses, models))
    trainer = train_module.ClassifierTrainer(
        ClassifierDataArguments(
            train_file=str(corpus["train"]), validation_file=str(corpus["validation"]), max_length=32
        ),
        ClassifierModelArguments(model_name_or_path=str(model_dir)),
        ClassifierTrainArguments(learning_rate=LR, warmup_ratio=WARMUP, num_train_epochs=EPOCHS, batch_size=BATCH),
        RunArguments(output_dir=str(out), seed=3, checkpointing_steps=0, cpu=True),
    )
    trainer.train_loop()
    trainer.run.finish()
    return trainer.engine.schedulers["model"].get_last_lr()[0]


def run_trainer(corpus, model_dir, out, losses, models):
    from accelerate.utils import set_seed
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    from gan_accel.classifier.config import ClassifierDataArguments, ClassifierModelArguments
    from gan_accel.classifier.data import encode_data, read_labelled_rows, text_lengths
    from gan_accel.classifier.model import load_tokenizer
    from gan_accel.data.length_grouped import LengthGroupedSampler

    reset_accelerate()
    data_args = ClassifierDataArguments(
        train_file=str(corpus["train"]), validation_file=str(corpus["validation"]), max_length=32
    )
    model_args = ClassifierModelArguments(model_name_or_path=str(model_dir))
    raw, tokenizer = read_labelled_rows(data_args), load_tokenizer(model_args)
    set_seed(3)  # as ClassifierTrainer before it loads the model: the same new head
    data = encode_data(raw, data_args, tokenizer)
    model = recording_loader(losses, models)(model_args, data.label_names)

    class SameOrderTrainer(Trainer):
        def _get_train_sampler(self, train_dataset=None):
            return LengthGroupedSampler(text_lengths(data.train), BATCH, seed=3)

    args = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=BATCH,
        num_train_epochs=EPOCHS,
        learning_rate=LR,
        lr_scheduler_type="linear",
        warmup_steps=WARMUP,
        weight_decay=0.0,
        max_grad_norm=1.0,
        eval_strategy="no",
        save_strategy="no",
        report_to=[],
        seed=3,
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = SameOrderTrainer(
        model=model,
        args=args,
        train_dataset=data.train,
        data_collator=DataCollatorWithPadding(tokenizer),
        processing_class=tokenizer,
    )
    trainer.train()
    return trainer.lr_scheduler.get_last_lr()[0]


def test_same_order_same_weights_same_loss_at_every_update(inputs, tmp_path, monkeypatch):
    corpus, model_dir = inputs
    ours, theirs, models = [], [], []
    our_lr = run_toolkit(corpus, model_dir, tmp_path / "toolkit", ours, models, monkeypatch)
    their_lr = run_trainer(corpus, model_dir, tmp_path / "trainer", theirs, models)
    assert len(ours) == len(theirs) == EPOCHS * 8
    # The first update's loss is the same model on the same batch; every later one also depends on
    # the optimizer, schedule and clipping of all the updates before it.
    assert ours == pytest.approx(theirs, rel=1e-4, abs=1e-5)
    assert our_lr == their_lr == 0.0
    (our_model, our_start), (their_model, their_start) = models
    final = {k: v.detach() for k, v in our_model.state_dict().items()}
    for name, theirs_now in their_model.state_dict().items():
        assert torch.equal(our_start[name], their_start[name]), name  # the same start, head included
        assert torch.allclose(final[name], theirs_now, rtol=1e-4, atol=1e-6), name
    # It trained: a frozen model would agree with itself too.
    assert max((final[k] - our_start[k]).abs().max().item() for k in final) > 1e-3
