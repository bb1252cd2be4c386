"""The runner (gan_accel/runner.py) and what each task declares to it: each test is a defect of the
time when every task wrote its own run sequence and a shared name list had to know it."""

import json
import os
import shutil
import signal

import pytest
import torch

from benchmarks.common import reset_accelerate
from cyclegan_fixtures import TINY_CYCLEGAN
from gan_accel.config import FREE, WARN, RunArguments, resume_changes, resume_policy
from gan_accel.errors import UserError
from helpers import TINY_GAN, load_script

train_cyclegan = load_script("train_cyclegan").main


# ---- resume policy: declared per field, for every task ----------------------------------
def test_cyclegan_and_distillation_allow_the_changes_the_gan_allows():
    from gan_accel.classifier.distill.train import DistillTrainer
    from gan_accel.cyclegan.trainer import CycleGANTrainer

    cyclegan = resume_policy(*CycleGANTrainer.config_types())
    saved = {"lr": 2e-4, "lambda_cycle": 10.0, "lambda_identity": 0.5, "n_epochs": 2, "batch_size": 4}
    now = {"lr": 1e-4, "lambda_cycle": 5.0, "lambda_identity": 0.0, "n_epochs": 3, "batch_size": 4}
    refused, changed = resume_changes(saved, now, cyclegan)
    assert refused == [] and len(changed) == 4
    assert resume_changes(saved, {**now, "batch_size": 8}, cyclegan)[0] == ["--batch_size 4 -> 8"]
    distill = resume_policy(*DistillTrainer.config_types())
    refused, changed = resume_changes(
        {"alpha_kd": 0.5, "temperature": 2.0}, {"alpha_kd": 0.9, "temperature": 4.0}, distill
    )
    assert refused == [] and changed == ["--alpha_kd 0.5 -> 0.9", "--temperature 2.0 -> 4.0"]
    assert distill["cache_teacher_logits"] == FREE and cyclegan["lr"] == WARN


def test_resume_policy_names_say_what_a_resume_with_another_value_gets():
    """A researcher read the old name ``same`` as "must stay the same" (it meant "may change
    freely") and marked a batch size with it. The names are the outcome: free, warn, refuse."""
    from dataclasses import dataclass, field

    from gan_accel.config import REFUSE, RESUME_POLICIES

    assert (FREE, WARN, REFUSE) == RESUME_POLICIES == ("free", "warn", "refuse")

    @dataclass
    class Old:
        batch_size: int = field(default=8, metadata={"resume": "same"})

    with pytest.raises(TypeError, match="'same' is not one of"):
        resume_policy(Old)

    @dataclass
    class Mine:
        batch_size: int = field(default=8, metadata={"resume": "refuse"})
        log_every: int = field(default=10, metadata={"resume": "free"})

    refused, changed = resume_changes(
        {"batch_size": 8, "log_every": 10}, {"batch_size": 4, "log_every": 5}, resume_policy(Mine)
    )
    assert refused == ["--batch_size 8 -> 4"] and changed == []


# ---- declared outputs: --overwrite_output_dir, the closing line --------------------------
def test_overwrite_removes_a_cyclegan_runs_exports(tmp_path, capsys):
    run = tmp_path / "run"
    reset_accelerate()
    assert train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1"]) == 0
    assert (run / "generator_A2B").is_dir()
    (run / "notes.txt").write_text("mine")
    capsys.readouterr()
    reset_accelerate()
    assert (
        train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1", "--overwrite_output_dir"]) == 0
    )
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("--overwrite_output_dir"))
    assert "generator_A2B" in line.split("; kept")[0] and line.endswith("; kept notes.txt")
    closing = next(x for x in out.splitlines() if x.startswith("Run folder:"))
    assert closing.startswith(f"Run folder: {run}  (") and f"generator_A2B: {run / 'generator_A2B'}" in closing


def gan(out, max_steps, **run_kwargs):
    from gan_accel.gan.config import GANDataArguments, GANModelArguments, GANTrainArguments

    reset_accelerate()
    return (
        GANDataArguments(image_size=16),
        GANModelArguments(z_dim=8, g_channels=8, d_channels=8),
        GANTrainArguments(max_steps=max_steps, batch_size=32, sample_every=2),
        RunArguments(output_dir=str(out), checkpointing_steps=0, **run_kwargs),
    )


def test_run_folder_line_after_a_signal_lists_no_export_of_an_earlier_run(tmp_path, capsys):
    from gan_accel.gan.trainer import GANTrainer

    GANTrainer(*gan(tmp_path / "run", 2)).train()
    assert (tmp_path / "run" / "generator").is_dir()
    capsys.readouterr()

    def stop_at_3(state):
        if state.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    t = GANTrainer(*gan(tmp_path / "run", 6, resume_from_checkpoint="latest"), on_update=stop_at_3)
    t.train()
    assert t.run.state.step == 3
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("Run folder:")]
    assert lines == [f"Run folder: {tmp_path / 'run'}"]  # no grid at step 3 (every 2), no export: stopped


def test_a_resume_with_nothing_to_train_exports_only_what_is_missing(tmp_path, capsys):
    """The final checkpoint records what its export wrote (exported.json): a resume that trains
    nothing leaves those exports alone; one whose export never happened (killed first) exports."""
    from gan_accel.gan.trainer import GANTrainer
    from gan_accel.runner import EXPORTS_FILE

    run = tmp_path / "run"
    GANTrainer(*gan(run, 2)).train()
    final = run / "checkpoints" / "step_00000002"
    assert sorted(json.loads((final / EXPORTS_FILE).read_text())) == ["generator", "samples"]
    before = (run / "generator").stat()
    capsys.readouterr()
    GANTrainer(*gan(run, 2, resume_from_checkpoint="latest")).train()
    assert (run / "generator").stat().st_ino == before.st_ino
    assert f"Run folder: {run}\n" in capsys.readouterr().out

    (final / EXPORTS_FILE).unlink()  # as if the run had been killed between its checkpoint and its export
    GANTrainer(*gan(run, 2, resume_from_checkpoint="latest")).train()
    assert (run / "generator").stat().st_ino != before.st_ino
    assert f"generator: {run / 'generator'}" in capsys.readouterr().out


def test_a_failing_export_still_closes_the_run(tmp_path, monkeypatch):
    import gan_accel.cyclegan.trainer as trainer_module

    def broken(*args, **kwargs):
        raise UserError("disk gone")

    monkeypatch.setattr(trainer_module, "save_translator", broken)
    run = tmp_path / "run"
    reset_accelerate()
    with pytest.raises(SystemExit):
        train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1"])
    assert not (run / "run.lock").exists()  # run.finish() ran (in finally): the folder is free


# ---- checkpoints of every task record it; old ones (without it) still resume -------------
def test_an_old_checkpoint_without_its_task_still_resumes(tmp_path):
    from gan_accel.gan.trainer import GANTrainer

    GANTrainer(*gan(tmp_path / "run", 2)).train()
    ckpt = tmp_path / "run" / "checkpoints" / "step_00000002"
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["project"] == "gan"
    del state["project"]  # the layout before checkpoints recorded their task (nor their recipe)
    (ckpt / "trainer_state.json").write_text(json.dumps(state))
    (ckpt / "recipe.json").unlink()
    t = GANTrainer(*gan(tmp_path / "run", 4, resume_from_checkpoint="latest"))
    assert t.run.state.step == 2
    t.train()
    saved = json.loads((tmp_path / "run" / "checkpoints" / "step_00000004" / "trainer_state.json").read_text())
    assert saved["project"] == "gan" and saved["state"]["step"] == 4


def test_an_old_checkpoint_of_another_task_is_refused_in_one_line(tmp_path):
    from gan_accel.cyclegan.trainer import CycleGANTrainer
    from gan_accel.gan.trainer import GANTrainer

    GANTrainer(*gan(tmp_path / "run", 2)).train()
    ckpt = tmp_path / "run" / "checkpoints" / "step_00000002"
    state = json.loads((ckpt / "trainer_state.json").read_text())
    del state["project"]
    (ckpt / "trainer_state.json").write_text(json.dumps(state))
    reset_accelerate()
    with pytest.raises(
        UserError, match=r"not a cyclegan checkpoint \(it has settings [a-z_, ]+ that cyclegan runs do not\)"
    ):
        CycleGANTrainer(RunArguments(output_dir=str(tmp_path / "new"), resume_from_checkpoint=str(ckpt)))
    assert not (tmp_path / "new").exists()


# ---- exports read back: the message for the wrong kind of folder ------------------------
def write_config(folder, config):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_translator_loader_names_what_it_was_given(tmp_path):
    from gan_accel.cyclegan.export import load_translator

    classifier = write_config(tmp_path / "clf" / "model", {"model_type": "distilbert", "architectures": ["X"]})
    with pytest.raises(
        UserError, match="not a CycleGAN translator: its config.json describes a distilbert model"
    ) as err:
        load_translator(classifier)
    assert "dcgan" not in str(err.value)
    gan_export = write_config(
        tmp_path / "gan" / "generator", {"z_dim": 8, "channels": 1, "image_size": 16, "arch": "dcgan"}
    )
    with pytest.raises(UserError, match="a 'dcgan' noise-to-image generator .*gan-accel sample-gan"):
        load_translator(gan_export)
    run = tmp_path / "cyclegan_run"
    write_config(run / "generator_B2A", {"arch": "cyclegan_resnet"})
    (run / "checkpoints").mkdir()
    with pytest.raises(
        UserError, match=f"this is a training run folder, not its export; pass {run / 'generator_B2A'}"
    ):
        load_translator(run)


def test_generator_loader_on_a_cyclegan_run_does_not_suggest_a_missing_folder(tmp_path):
    from gan_accel.models import load_generator

    run = tmp_path / "cyclegan_run"
    write_config(run / "generator_A2B", {"arch": "cyclegan_resnet"})
    (run / "checkpoints").mkdir()
    with pytest.raises(UserError) as err:
        load_generator(run)
    message = str(err.value)
    assert "without a generator or best_generator export" in message and "gan-accel translate" in message
    assert f"pass {run / 'generator'}" not in message


# ---- the teacher-logit cache: keyed by the teacher's weights, checked by its hash ----------
class Teacher(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)


def test_teacher_cache_depends_on_the_weights_not_the_path(tmp_path):
    from gan_accel.classifier.distill.teacher import fingerprint

    dataset = [{"input_ids": [1, 2, 3]}, {"input_ids": [4, 5]}]
    teacher = Teacher()
    before = fingerprint(teacher, dataset, {"max_length": 32})
    assert fingerprint(teacher, dataset, {"max_length": 32}) == before
    with torch.no_grad():
        teacher.linear.weight[0, 0] += 1e-3  # retrained in place: the same path, other logits
    assert fingerprint(teacher, dataset, {"max_length": 32}) != before
    assert fingerprint(Teacher(), dataset, {"max_length": 64})["max_length"] == "64"


def cache_roundtrip(tmp_path, damage):
    from gan_accel.classifier.distill.teacher import CACHE_FILE, load_cached_logits, save_cached_logits

    path = tmp_path / CACHE_FILE
    meta = {"teacher_sha256": "abc", "examples": "8"}
    logits = torch.randn(8, 3, generator=torch.Generator().manual_seed(0))
    save_cached_logits(path, logits, meta)
    assert torch.equal(load_cached_logits(path, meta, warn=pytest.fail), logits)
    damage(path)
    warnings = []
    assert load_cached_logits(path, meta, warn=warnings.append) is None
    return warnings


def test_a_byte_flipped_teacher_cache_is_not_reused(tmp_path):
    def flip(path):
        data = bytearray(path.read_bytes())
        data[-5] ^= 0x40  # inside the logits: the header still parses
        path.write_bytes(bytes(data))

    warnings = cache_roundtrip(tmp_path, flip)
    assert len(warnings) == 1 and "does not match its hash" in warnings[0]


def test_a_truncated_teacher_cache_is_rebuilt_with_a_warning(tmp_path):
    def truncate(path):
        path.write_bytes(path.read_bytes()[:20])

    warnings = cache_roundtrip(tmp_path, truncate)
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "computing the teacher logits again" in warnings[0]


def test_gan_help_and_dry_run_go_through_the_runner(tmp_path, capsys):
    train_gan = load_script("train_gan").main
    assert train_gan([*TINY_GAN, "--output_dir", str(tmp_path / "x"), "--dry_run"]) == 0
    assert not (tmp_path / "x").exists() and '"z_dim": 8' in capsys.readouterr().out


# ---- distillation: the classifier's batching and checks, the cache's dependencies ---------
@pytest.fixture(scope="module")
def distill_setup(tmp_path_factory):
    from classifier_fixtures import make_corpus, make_tiny, train_argv, train_in_process

    folder = tmp_path_factory.mktemp("runner_distill")
    corpus = make_corpus(folder / "data", n_train=64, n_val=16)
    tiny = make_tiny(folder / "tiny", corpus["train"])
    teacher = train_in_process(train_argv(corpus, tiny, folder / "teacher_run", "--max_steps", "2")) / "model"
    return {"corpus": corpus, "teacher": teacher, "folder": folder}


def distill_configs(setup, out, *extra):
    from distill_fixtures import distill_argv
    from gan_accel.classifier.distill.train import DistillTrainer
    from gan_accel.config import parse_config

    reset_accelerate()
    return parse_config(DistillTrainer.config_types(), distill_argv(setup, out, "--student_from_teacher", *extra))


@pytest.mark.parametrize("extra,grouped", [((), True), (("--no_group_by_length", "--pad_to_multiple_of", "8"), False)])
def test_distillation_batches_as_the_flags_ask(distill_setup, tmp_path, extra, grouped):
    from gan_accel.classifier.distill.train import DistillTrainer
    from gan_accel.data.length_grouped import LengthGroupedSampler

    trainer = DistillTrainer(*distill_configs(distill_setup, tmp_path / "out", "--max_steps", "2", *extra))
    try:
        assert isinstance(trainer.engine.sampler, LengthGroupedSampler) == grouped
        widths = [b["input_ids"].shape[1] for b in trainer.engine.loader]
        assert widths and (grouped or all(w % 8 == 0 for w in widths))
    finally:
        trainer.run.finish()


def test_distillation_checks_the_schedule_before_the_folder_is_touched(distill_setup, tmp_path):
    from gan_accel.classifier.distill.train import DistillTrainer

    with pytest.raises(UserError, match="--warmup_steps 50 must be smaller than the 2 optimizer updates"):
        DistillTrainer(*distill_configs(distill_setup, tmp_path / "out", "--max_steps", "2", "--warmup_steps", "50"))
    assert not (tmp_path / "out").exists()


def test_teacher_retrained_in_place_is_not_served_from_a_stale_cache(distill_setup, tmp_path, capsys):
    from transformers import AutoModelForSequenceClassification

    from gan_accel.classifier.distill.train import train_distill

    teacher_dir = tmp_path / "teacher"
    AutoModelForSequenceClassification.from_pretrained(distill_setup["teacher"]).save_pretrained(teacher_dir)
    for f in distill_setup["teacher"].iterdir():  # the tokenizer files too
        if not (teacher_dir / f.name).exists():
            shutil.copy(f, teacher_dir / f.name)
    setup = {**distill_setup, "teacher": teacher_dir}
    out = tmp_path / "student"
    flags = ("--max_steps", "2", "--cache_teacher_logits", "--checkpointing_steps", "1")

    def messages():
        return [x for x in capsys.readouterr().out.splitlines() if x.startswith("teacher logits for")]

    train_distill(*distill_configs(setup, out, *flags))
    assert "computed" in messages()[0]
    train_distill(*distill_configs(setup, out, *flags, "--max_steps", "3", "--resume_from_checkpoint", "latest"))
    assert "reused from the run folder" in messages()[0]
    model = AutoModelForSequenceClassification.from_pretrained(teacher_dir)
    with torch.no_grad():
        model.classifier.weight.mul_(2.0)  # "retrained" in place: the same path
    model.save_pretrained(teacher_dir)
    train_distill(*distill_configs(setup, out, *flags, "--max_steps", "4", "--resume_from_checkpoint", "latest"))
    assert "computed" in messages()[0]
    train_distill(*distill_configs(setup, out, *flags, "--overwrite_output_dir"))
    assert "computed" in messages()[0]


def strip_to_old_layout(ckpt):
    """A checkpoint as written before checkpoints recorded their task and recipe."""
    state = json.loads((ckpt / "trainer_state.json").read_text())
    project = state.pop("project")
    (ckpt / "trainer_state.json").write_text(json.dumps(state))
    (ckpt / "recipe.json").unlink()
    return project


def test_old_checkpoints_of_cyclegan_classifier_and_distillation_still_resume(distill_setup, tmp_path):
    from classifier_fixtures import train_argv, train_in_process
    from gan_accel.classifier.distill.train import train_distill

    run = tmp_path / "cyclegan"
    reset_accelerate()
    assert train_cyclegan([*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "1"]) == 0
    assert strip_to_old_layout(run / "checkpoints" / "step_00000001") == "cyclegan"
    reset_accelerate()
    assert (
        train_cyclegan(
            [*TINY_CYCLEGAN, "--output_dir", str(run), "--max_steps", "2", "--resume_from_checkpoint", "latest"]
        )
        == 0
    )
    assert json.loads((run / "checkpoints/step_00000002/trainer_state.json").read_text())["project"] == "cyclegan"

    clf = shutil.copytree(distill_setup["folder"] / "teacher_run", tmp_path / "clf")
    assert strip_to_old_layout(clf / "checkpoints" / "step_00000002") == "classifier"
    tiny = distill_setup["folder"] / "tiny"
    train_in_process(
        train_argv(distill_setup["corpus"], tiny, clf, "--max_steps", "3", "--resume_from_checkpoint", "latest")
    )
    assert json.loads((clf / "checkpoints/step_00000003/trainer_state.json").read_text())["state"]["step"] == 3

    student = tmp_path / "student"
    train_distill(*distill_configs(distill_setup, student, "--max_steps", "1"))
    assert strip_to_old_layout(student / "checkpoints" / "step_00000001") == "distill"
    run = train_distill(
        *distill_configs(distill_setup, student, "--max_steps", "2", "--resume_from_checkpoint", "latest")
    )
    assert run.state.step == 2
