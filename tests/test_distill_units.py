"""Distillation components on their own: the losses against hand-computed values, DistilBERT's
student initialisation, the label/vocabulary checks, the config rules and the logit cache."""

import math

import pytest
import torch

import classifier_fixtures  # noqa: E402,F401  (sets the offline environment)
from gan_accel.classifier.distill.config import DistillArguments, DistillModelArguments  # noqa: E402
from gan_accel.classifier.distill.losses import (  # noqa: E402
    distillation_loss,
    hard_target_loss,
    hidden_cosine_loss,
    soft_target_loss,
)
from gan_accel.classifier.distill.networks import check_labels, check_vocabulary, check_widths  # noqa: E402
from gan_accel.classifier.distill.student import layer_map, parameter_count, student_from_teacher  # noqa: E402
from gan_accel.classifier.distill.teacher import (  # noqa: E402
    IndexedDataset,
    load_cached_logits,
    save_cached_logits,
)
from gan_accel.errors import ConfigError, UserError  # noqa: E402


# ---- losses ---------------------------------------------------------------------------------
def kl(p, q):
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))


def softmax(xs):
    e = [math.exp(x) for x in xs]
    return [v / sum(e) for v in e]


def test_soft_target_loss_hand_values():
    student, teacher = torch.tensor([[0.0, 0.0]]), torch.tensor([[math.log(3.0), 0.0]])
    # T = 1: teacher probabilities (3/4, 1/4) against the uniform student.
    assert soft_target_loss(student, teacher, 1.0).item() == pytest.approx(
        0.75 * math.log(1.5) + 0.25 * math.log(0.5), abs=1e-6
    )  # 0.130812
    # T = 2: softmax(teacher / 2) = (sqrt 3, 1) / (sqrt 3 + 1); KL to uniform, times T^2 = 4.
    p = [math.sqrt(3) / (math.sqrt(3) + 1), 1 / (math.sqrt(3) + 1)]
    assert soft_target_loss(student, teacher, 2.0).item() == pytest.approx(4 * kl(p, [0.5, 0.5]), abs=1e-6)


def test_soft_target_loss_averages_over_the_batch_and_is_zero_on_agreement():
    s = torch.tensor([[1.0, -2.0, 0.5], [0.0, 0.3, 0.1]])
    t = torch.tensor([[0.2, 0.1, -1.0], [2.0, 0.0, 0.0]])
    per_row = [
        kl(softmax([v / 3 for v in ti]), softmax([v / 3 for v in si])) for si, ti in zip(s.tolist(), t.tolist())
    ]
    assert soft_target_loss(s, t, 3.0).item() == pytest.approx(9 * sum(per_row) / 2, abs=1e-6)
    assert soft_target_loss(t, t, 3.0).item() == pytest.approx(0.0, abs=1e-7)


def test_hard_target_loss_and_cosine_loss_hand_values():
    assert hard_target_loss(
        torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)]]), torch.tensor([0, 1])
    ).item() == pytest.approx((math.log(2) + math.log(4 / 3)) / 2, abs=1e-6)
    s = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [5.0, 5.0]]])  # [B=1, L=3, D=2]
    t = torch.tensor([[[0.0, 1.0], [2.0, 0.0], [-9.0, 1.0]]])
    # Orthogonal (1 - 0) and parallel (1 - 1); the third token is padding and must not count.
    assert hidden_cosine_loss(s, t, torch.tensor([[1, 1, 0]])).item() == pytest.approx(0.5, abs=1e-6)


def test_distillation_loss_weighs_and_logs_each_term():
    s, t, y = torch.tensor([[0.0, 0.0]]), torch.tensor([[math.log(3.0), 0.0]]), torch.tensor([1])
    hidden = (torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[0.0, 1.0]]]), torch.tensor([[1]]))
    loss, metrics = distillation_loss(
        s, t, y, alpha_kd=0.5, alpha_ce=2.0, temperature=1.0, alpha_cos=3.0, hidden=hidden
    )
    kd, ce = 0.75 * math.log(1.5) + 0.25 * math.log(0.5), math.log(2)
    assert loss.item() == pytest.approx(0.5 * kd + 2.0 * ce + 3.0 * 1.0, abs=1e-6)
    assert metrics["loss/kd"].item() == pytest.approx(kd, abs=1e-6)  # unweighted terms
    assert metrics["loss/ce"].item() == pytest.approx(ce, abs=1e-6) and metrics["loss/cos"].item() == pytest.approx(
        1.0
    )
    _, labels_only = distillation_loss(s, t, y, alpha_kd=0.0, alpha_ce=1.0, temperature=2.0)
    assert set(labels_only) == {"loss/train", "loss/ce"}
    with pytest.raises(ValueError, match="hidden states"):
        distillation_loss(s, t, y, 1.0, 0.0, 1.0, alpha_cos=1.0)


def test_only_the_student_gets_gradients():
    s = torch.tensor([[0.3, -0.2, 0.1]], requires_grad=True)
    t = torch.tensor([[1.0, 0.0, -1.0]])
    loss, _ = distillation_loss(s, t, torch.tensor([2]), alpha_kd=1.0, alpha_ce=1.0, temperature=2.0)
    loss.backward()
    assert s.grad is not None and t.grad is None
    # d/ds of T^2 KL(p_t || p_s) at temperature T is T (p_s - p_t); plus CE's (softmax(s) - onehot).
    T = 2.0
    p_s, p_t = softmax([v / T for v in s.tolist()[0]]), softmax([v / T for v in t.tolist()[0]])
    q = softmax(s.tolist()[0])
    expected = [T * (a - b) + (c - (i == 2)) for i, (a, b, c) in enumerate(zip(p_s, p_t, q))]
    assert s.grad[0].tolist() == pytest.approx(expected, abs=1e-6)


# ---- the student ------------------------------------------------------------------------------
def tiny_distilbert(n_layers=4, dim=16, labels=("a", "b", "c")):
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    config = DistilBertConfig(
        vocab_size=50,
        dim=dim,
        hidden_dim=2 * dim,
        n_layers=n_layers,
        n_heads=2,
        max_position_embeddings=32,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={n: i for i, n in enumerate(labels)},
    )
    return DistilBertForSequenceClassification(config).eval()


@pytest.mark.parametrize(
    "teacher,student,expected",
    [
        (12, 6, [0, 2, 4, 7, 9, 11]),  # DistilBERT's own choice from BERT-base
        (4, 2, [0, 3]),
        (6, 3, [0, 2, 5]),
        (3, 3, [0, 1, 2]),
        (2, 1, [0]),
    ],
)
def test_layer_map(teacher, student, expected):
    assert layer_map(teacher, student) == expected


def test_layer_map_refuses_a_deeper_student():
    with pytest.raises(UserError, match="--student_layers 5: must be between 1 and the teacher's 4 layers"):
        layer_map(4, 5)


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_student_from_teacher_copies_embeddings_head_and_spaced_layers():
    teacher = tiny_distilbert(n_layers=4)
    student = student_from_teacher(teacher, 2)
    assert type(student) is type(teacher) and student.config.n_layers == 2 and teacher.config.n_layers == 4
    assert student.config.id2label == teacher.config.id2label
    layers_t, layers_s = teacher.distilbert.transformer.layer, student.distilbert.transformer.layer
    assert same(layers_s[0], layers_t[0]) and same(layers_s[1], layers_t[3])
    assert not same(layers_s[1], layers_t[1])  # the comparison can fail
    for name in ("distilbert.embeddings", "pre_classifier", "classifier"):
        assert same(student.get_submodule(name), teacher.get_submodule(name)), name
    assert parameter_count(student) < parameter_count(teacher)
    # Independent copies: training the student leaves the teacher alone.
    with torch.no_grad():
        student.classifier.weight.add_(1.0)
    assert not torch.equal(student.classifier.weight, teacher.classifier.weight)
    ids = torch.tensor([[1, 5, 7, 2]])
    assert student(input_ids=ids).logits.shape == (1, 3)


def test_student_from_teacher_works_for_bert_too():
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    teacher = BertForSequenceClassification(
        BertConfig(
            vocab_size=40,
            hidden_size=16,
            num_hidden_layers=6,
            num_attention_heads=2,
            intermediate_size=32,
            num_labels=2,
        )
    )
    student = student_from_teacher(teacher, 3)
    assert student.config.num_hidden_layers == 3
    for i, j in enumerate([0, 2, 5]):
        assert same(student.bert.encoder.layer[i], teacher.bert.encoder.layer[j])
    assert same(student.bert.pooler, teacher.bert.pooler)


# ---- checks -----------------------------------------------------------------------------------
def test_label_checks():
    teacher = tiny_distilbert(labels=("a", "b", "c")).config
    check_labels(teacher, ["a", "b", "c"], "T")
    with pytest.raises(
        UserError,
        match=r"--teacher_model_name_or_path T: its labels \['a', 'b', 'c'\] are the data's "
        r"in another order .*; pass --label_names a b c",
    ):
        check_labels(teacher, ["c", "b", "a"], "T")
    with pytest.raises(UserError, match=r"its labels \['a', 'b', 'c'\] differ from the data's \['a', 'b'\]"):
        check_labels(teacher, ["a", "b"], "T")


def test_vocabulary_check(tmp_path):
    from transformers import AutoTokenizer

    from gan_accel.classifier.tiny import train_wordpiece

    one = train_wordpiece(["the cat sat on the mat"] * 3, vocab_size=60)
    other = train_wordpiece(["completely different words here"] * 3, vocab_size=60)
    one.save_pretrained(tmp_path)
    check_vocabulary(one, AutoTokenizer.from_pretrained(tmp_path), "S")  # the same vocabulary, saved and reloaded
    with pytest.raises(
        UserError,
        match=r"--student_model_name_or_path S: its tokenizer vocabulary \(\d+ tokens\) is "
        r"not the teacher's",
    ):
        check_vocabulary(one, other, "S")


def test_width_check_only_with_the_cosine_loss():
    teacher, narrow = tiny_distilbert(dim=16).config, tiny_distilbert(dim=8).config
    check_widths(teacher, narrow, alpha_cos=0.0)
    with pytest.raises(
        UserError, match=r"--alpha_cos 1.0: the student's hidden width \(8\) is not the teacher's \(16\)"
    ):
        check_widths(teacher, narrow, alpha_cos=1.0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({}, "--teacher_model_name_or_path is required"),
        ({"teacher_model_name_or_path": "T"}, "exactly one of --student_model_name_or_path or --student_from_teacher"),
        (
            {"teacher_model_name_or_path": "T", "student_model_name_or_path": "S", "student_from_teacher": True},
            "exactly one of",
        ),
        (
            {"teacher_model_name_or_path": "T", "student_model_name_or_path": "S", "student_layers": 2},
            "--student_layers needs --student_from_teacher",
        ),
        (
            {"teacher_model_name_or_path": "T", "student_from_teacher": True, "student_layers": 0},
            "--student_layers must be > 0",
        ),
    ],
)
def test_model_config_rules(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        DistillModelArguments(**kwargs)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"alpha_kd": -1.0}, "--alpha_kd must be >= 0"),
        ({"alpha_kd": 0.0, "alpha_ce": 0.0}, "all 0"),
        ({"temperature": 0.0}, "--temperature must be > 0"),
        ({"cache_teacher_logits": True, "alpha_cos": 1.0}, "cannot be combined with --alpha_cos"),
    ],
)
def test_loss_config_rules(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        DistillArguments(**kwargs)


def test_the_teacher_runs_in_the_loop_only_when_needed():
    assert DistillArguments().needs_teacher_in_loop
    assert not DistillArguments(cache_teacher_logits=True).needs_teacher_in_loop
    assert not DistillArguments(alpha_kd=0.0, alpha_ce=1.0).needs_teacher_in_loop  # labels only
    assert DistillArguments(alpha_cos=1.0).needs_teacher_in_loop


# ---- the logit cache --------------------------------------------------------------------------
def test_cache_file_is_reused_only_for_the_same_teacher_and_data(tmp_path):
    path = tmp_path / "teacher_logits.safetensors"
    logits = torch.randn(5, 3)
    meta = {"teacher": "T", "examples": "5", "max_length": "32", "input_ids_sha256": "abc"}
    assert load_cached_logits(path, meta) is None
    save_cached_logits(path, logits, meta)
    assert torch.equal(load_cached_logits(path, meta), logits)
    assert load_cached_logits(path, {**meta, "input_ids_sha256": "other"}) is None
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_computed_cache_matches_the_teacher_example_by_example():
    from accelerate import Accelerator

    from gan_accel.classifier.distill.teacher import compute_teacher_logits

    teacher = tiny_distilbert()
    rows = [
        {"input_ids": [2] + list(range(5, 5 + n)) + [3], "attention_mask": [1] * (n + 2), "labels": n % 3}
        for n in range(1, 8)
    ]  # 7 examples of different lengths: batches of 3 are padded

    def collate(items):
        return {
            k: torch.nn.utils.rnn.pad_sequence([torch.tensor(i[k]) for i in items], batch_first=True)
            if isinstance(items[0][k], list)
            else torch.tensor([i[k] for i in items])
            for k in items[0]
        }

    loader = torch.utils.data.DataLoader(IndexedDataset(rows), batch_size=3, collate_fn=collate)
    cached = compute_teacher_logits(Accelerator(cpu=True), teacher, loader, num_labels=3)
    with torch.no_grad():
        one_by_one = torch.cat([teacher(input_ids=torch.tensor([r["input_ids"]])).logits for r in rows])
    torch.testing.assert_close(cached, one_by_one, atol=1e-5, rtol=1e-5)


# ---- best-student keeping ---------------------------------------------------------------------
def test_only_a_sound_student_is_kept():
    from types import SimpleNamespace

    from gan_accel.classifier.distill.evaluation import DistillEvaluator
    from gan_accel.engine import BestKeeper
    from gan_accel.loop.state import TrainState

    exported = []
    student = torch.nn.Linear(2, 2)
    evaluator = object.__new__(DistillEvaluator)  # only what keep() reads
    evaluator.engine = SimpleNamespace(nets=SimpleNamespace(student=student))
    evaluator.keeper = BestKeeper(TrainState(), "eval/accuracy", True, exported.append)
    # A diverged student: argmax of NaN logits still gives a finite accuracy, with a NaN loss.
    assert not evaluator.keep({"eval/accuracy": 0.9, "eval/loss": float("nan")})
    with torch.no_grad():
        student.weight[0, 0] = float("inf")
    assert not evaluator.keep({"eval/accuracy": 0.9, "eval/loss": 0.3})
    with torch.no_grad():
        student.weight[0, 0] = 1.0
    assert evaluator.keep({"eval/accuracy": 0.9, "eval/loss": 0.3}) and len(exported) == 1
