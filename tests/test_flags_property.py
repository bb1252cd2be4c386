"""The bad-input contract of every command, as a property over generated flag values.

Every sub-command of ``gan-accel`` (gan_accel.cli.COMMANDS) keeps one rule whatever its flags
say: exit 0, or exactly one non-empty line on stderr with a non-zero exit and no traceback; and
nothing on disk is created or changed before the work starts. The tables of test_bad_input_*.py
document the cases found by hand; this test draws the next ones: one or two flags of a command
(read from its own argparse parser, so a new flag is covered without editing this file) set to
values chosen to break a check (negative, zero, huge, NaN, empty, odd unicode, a missing path),
on top of a valid command.

Only the checks that run before the work are exercised, in-process: training commands run with
``--dry_run`` (which writes nothing), and for the others the first call that does the work
(generating, evaluating, exporting, writing) is replaced by one that stops the command, so an
example costs milliseconds and the whole run stays near a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import Path
from typing import Dict, List

import pytest

pytest.importorskip("hypothesis")  # the test extra installs it
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cyclegan_fixtures import TINY_CYCLEGAN
from gan_accel.cli import COMMANDS
from helpers import TINY_GAN
from run_fixtures import snapshot

DRY_RUN = ["--dry_run"]


class WorkStarts(BaseException):
    """Raised by the stand-in of a command's first working call: every check before it passed.
    A BaseException, so no ``except Exception`` of the command turns it into an error line."""


# The call that starts each command's work (after it, files are written or minutes are spent).
WORK_STARTS = {
    "sample-gan": ["gan_accel.sampling.generate_from_latents"],
    "evaluate-gan": ["gan_accel.cli.evaluate_gan.GANEvaluator"],
    "export-onnx": [
        "gan_accel.models.onnx_export.export_generator_onnx",
        "gan_accel.models.onnx_export.export_translator_onnx",
    ],
    "translate": ["gan_accel.cyclegan.translate.translate_folder"],
    "predict": ["gan_accel.classifier.predict.load_weights"],
    "plot-run": ["gan_accel.cli.plot_run.plot_metrics"],
    "make-photo-crops": ["gan_accel.loop.atomic.staged_files"],  # the crops are staged, then moved in
    "make-tiny-model": ["gan_accel.classifier.tiny.make_tiny_model"],
}


def base_commands(root: Path) -> Dict[str, List[str]]:
    """A valid command line of every sub-command, on the inputs under ``root`` (positional
    arguments first)."""
    corpus = root / "corpus"
    classifier = [
        "--train_file",
        str(corpus / "train.csv"),
        "--validation_file",
        str(corpus / "validation.csv"),
        "--max_length",
        "32",
        "--batch_size",
        "16",
    ]
    return {
        "train-gan": [*TINY_GAN, "--max_steps", "4", "--output_dir", str(root / "run_gan"), *DRY_RUN],
        "train-cyclegan": [
            *TINY_CYCLEGAN,
            "--data_dir",
            str(root / "domains"),
            "--max_steps",
            "2",
            "--output_dir",
            str(root / "run_cyclegan"),
            *DRY_RUN,
        ],
        "train-classifier": [
            *classifier,
            "--model_name_or_path",
            str(root / "tiny"),
            "--output_dir",
            str(root / "run_classifier"),
            *DRY_RUN,
        ],
        "distill-classifier": [
            *classifier,
            "--teacher_model_name_or_path",
            str(root / "tiny"),
            "--student_from_teacher",
            "--output_dir",
            str(root / "run_distill"),
            *DRY_RUN,
        ],
        "sample-gan": ["--generator", str(root / "generator"), "--num_images", "2", "--output_dir", "samples"],
        "evaluate-gan": ["--generator", str(root / "generator"), "--num_images", "50", "--output_dir", "eval"],
        "compare-metrics": [str(root / "a.json"), str(root / "b.json")],
        "export-onnx": ["--generator", str(root / "generator"), "--output", "g.onnx"],
        "translate": [
            "--generator",
            str(root / "translator"),
            "--input_dir",
            str(root / "domains" / "trainA"),
            "--output_dir",
            "translated",
        ],
        "predict": ["--model", str(root / "tiny"), "--text", "a good film"],
        "plot-run": [str(root / "run_metrics")],
        "make-photo-crops": ["--output_dir", "crops", "--num_crops", "2", "--num_heldout", "1", "--size", "8"],
        "make-tiny-model": ["--train_file", str(corpus / "train.csv"), "--output_dir", "tiny_out"],
    }


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Tiny inputs every base command needs: a 16 px generator export, a CycleGAN translator and
    its two domains, a classifier corpus and a tiny DistilBERT, two eval_results.json, a run's
    metrics.jsonl; and an empty working folder the commands run in."""
    from classifier_fixtures import make_corpus, make_tiny
    from cyclegan_fixtures import make_domains
    from gan_accel.cyclegan.export import save_translator
    from gan_accel.cyclegan.models import ResnetGenerator
    from gan_accel.models import build_models, save_generator

    root = tmp_path_factory.mktemp("flags")
    G, _ = build_models("dcgan", z_dim=8, channels=1, image_size=16, g_channels=8, d_channels=8, d_norm="none")
    save_generator(G, root / "generator")
    save_translator(ResnetGenerator(1, 4, 1), root / "translator", "A2B", 16)
    make_domains(root / "domains", num_a=2, num_b=2)
    corpus = make_corpus(root / "corpus", n_train=40, n_val=10)
    make_tiny(root / "tiny", corpus["train"])
    protocol = {"feature_extractor": "domain", "image_size": 16}
    for name, fid in (("a", 12.5), ("b", 13.0)):
        (root / f"{name}.json").write_text(json.dumps({"fid": fid, "protocol": protocol}))
    (root / "run_metrics").mkdir()
    (root / "run_metrics" / "metrics.jsonl").write_text('{"step": 1, "loss/D": 1.0}\n{"step": 2, "loss/D": 0.5}\n')
    (root / "work").mkdir()
    return root


def parser_actions(command: str, argv: List[str]) -> List[argparse.Action]:
    """The actions of the parser ``command`` builds, caught when ``--help`` asks it to print."""
    import importlib

    caught = []
    original = argparse.ArgumentParser.print_help

    def catch(self, file=None):
        caught.append(self)

    module = importlib.import_module(f"gan_accel.cli.{COMMANDS[command][0]}")
    argparse.ArgumentParser.print_help = catch
    try:
        with pytest.raises(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            module.main([*argv, "--help"])
    finally:
        argparse.ArgumentParser.print_help = original
    (parser,) = caught
    # --dry_run is the base command's way of writing nothing: a drawn `--dry_run 0` trains for real.
    return [a for a in parser._actions if not {"-h", "--help", "--debug", "--dry_run"} & set(a.option_strings)]


# Values chosen to break a check; every value is also a string a shell could pass.
HUGE = [2**31, 2**32, 2**63, 2**64, 10**20, -(2**64)]
INTS = st.one_of(st.integers(-3, 4), st.sampled_from(HUGE)).map(str)
FLOATS = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1e300", "1e300", "1e-300", "-0.0", "0", "0.5", "1", "-1", "2"]),
    st.floats(-1e6, 1e6).map(repr),
)
# Strings: odd ones, paths that are missing or already used, and numbers, lists and ranges for
# the string flags that hold them (--seeds, --time_budget, --report_to, --hub_model_id, ...).
ODD_STRINGS = st.one_of(
    st.sampled_from(["", " ", ".", "..", "/", "-", "a/b/c", "%s", "{}", "\u202e\u00e9", "x" * 300]),
    st.sampled_from(["missing/file.png", "missing_folder", "g.onnx", "samples", "a b/c", "-a/b", "a/b.git"]),
    st.sampled_from(["0.5s", "1e9h", "0s", "40", "1,2,,3", "0-100000000", "5-3", "-1-2", "3,-1"]),
    INTS,
    FLOATS,
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6),
)


def values_for(action: argparse.Action) -> st.SearchStrategy:
    """Argument strings for one action (an empty list: the flag alone)."""
    if action.nargs == 0:
        return st.just([])
    if action.choices:
        return st.one_of(st.sampled_from([str(c) for c in action.choices]), ODD_STRINGS).map(lambda v: [v])
    if action.type is int:
        return st.one_of(INTS, ODD_STRINGS).map(lambda v: [v])
    if action.type is float:
        return st.one_of(FLOATS, ODD_STRINGS).map(lambda v: [v])
    return ODD_STRINGS.map(lambda v: [v])


def with_values(base: List[str], actions: List[argparse.Action], chosen: List[int], values: List[List[str]]):
    """``base`` with the chosen actions' values: a flag is appended (the last one wins), a
    positional argument replaced in place."""
    argv = list(base)
    positionals = [a for a in actions if not a.option_strings]
    for index, value in zip(chosen, values):
        action = actions[index]
        if action.option_strings:
            argv += [action.option_strings[-1], *value]
        else:
            argv[positionals.index(action)] = value[0] if value else ""
    return argv


def stop_the_work(monkeypatch, command: str) -> None:
    import importlib

    def stop(*args, **kwargs):
        raise WorkStarts

    for target in WORK_STARTS.get(command, []):
        module, name = target.rsplit(".", 1)
        monkeypatch.setattr(importlib.import_module(module), name, stop)


def run_command(command: str, argv: List[str]) -> tuple:
    """``(exit code, stdout, stderr)`` of ``gan-accel COMMAND argv``, in-process."""
    from gan_accel.cli import main

    out = io.StringIO()
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([command, *argv])
        except SystemExit as exit_:
            code = exit_.code
        except WorkStarts:
            code = 0
    return code, out.getvalue(), err.getvalue()


def check_contract(root: Path, command: str, argv: List[str]) -> int:
    before = snapshot(root)
    cwd = os.getcwd()
    os.chdir(root / "work")  # relative paths in the drawn values land under root
    try:
        code, out, err = run_command(command, argv)
    finally:
        os.chdir(cwd)
    shown = f"gan-accel {command} {' '.join(map(repr, argv))}\nexit {code}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err, shown
    if code not in (0, None):
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert snapshot(root) == before, f"files created or changed by: {shown}"
    return code


def example(command: str, actions: List[argparse.Action]) -> st.SearchStrategy:
    chosen = st.lists(st.integers(0, len(actions) - 1), min_size=1, max_size=2, unique=True)
    return chosen.flatmap(
        lambda idx: st.tuples(st.just(idx), st.tuples(*(values_for(actions[i]) for i in idx)).map(list))
    )


def property_test(root: Path, monkeypatch, command: str, max_examples: int) -> None:
    if command == "export-onnx":
        pytest.importorskip("onnx")  # without it the base command is an error line (the onnx extra)
    base = base_commands(root)[command]
    stop_the_work(monkeypatch, command)
    actions = parser_actions(command, base)
    assert check_contract(root, command, base) == 0  # a valid base: the drawn flags are what fails

    @settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(example(command, actions))
    def flags_keep_the_contract(drawn):
        chosen, values = drawn
        check_contract(root, command, with_values(base, actions, chosen, values))

    flags_keep_the_contract()


def test_every_command_has_a_base_command(tmp_path):
    assert set(base_commands(tmp_path)) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_flags_keep_the_contract(command, inputs, monkeypatch):
    property_test(inputs, monkeypatch, command, max_examples=100)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_flags_keep_the_contract_many_examples(command, inputs, monkeypatch):
    property_test(inputs, monkeypatch, command, max_examples=500)
