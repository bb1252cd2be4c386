"""report.html: one self-contained page per run (gan_accel.loop.report), for every task, refreshed
at each evaluation and at the end, written atomically, every user string escaped."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from classifier_fixtures import make_corpus, make_tiny, train_argv, train_in_process
from cyclegan_fixtures import TINY_CYCLEGAN, make_domains
from distill_fixtures import distill_argv, distill_in_process
from gan_accel.errors import UserError
from gan_accel.loop import report, report_tasks
from gan_accel.loop.report import REPORT_FILE, ReportInputs, command_line, write_report
from helpers import load_script
from run_fixtures import run_gan


class References(HTMLParser):
    """Every ``src``/``href`` of a page, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.refs = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.refs += [value for name, value in attrs if name in ("src", "href")]

    def handle_data(self, data):
        self.text.append(data)


def references(page: Path) -> References:
    parser = References()
    parser.feed(page.read_text())
    return parser


def assert_self_contained(folder: Path) -> str:
    """The page exists, references only relative paths inside the folder, and each exists."""
    page = folder / REPORT_FILE
    assert page.is_file()
    parsed = references(page)
    for ref in parsed.refs:
        assert "://" not in ref and not ref.startswith("/") and ".." not in ref, ref
        assert (folder / ref).exists(), ref
    assert "<script" not in page.read_text()
    return "".join(parsed.text)


GAN_PAGES: dict = {}  # each page the GAN run wrote, in order


@pytest.fixture(scope="module")
def gan_run(tmp_path_factory) -> Path:
    """4 steps, an evaluation and a grid every 2: each evaluation's page is kept to compare."""
    out = tmp_path_factory.mktemp("report") / "gan"
    pages = {}
    original = report.write_report

    def keep(folder, project, inputs=None):
        path = original(folder, project, inputs)
        pages[len(pages)] = path.read_text()
        return path

    report.write_report = keep
    try:
        run_gan(out, "--eval_every", "2", "--eval_num_images", "100", "--sample_every", "2")
    finally:
        report.write_report = original
    GAN_PAGES.update(pages)
    return out


def test_gan_report_shows_the_run(gan_run):
    text = assert_self_contained(gan_run)
    page = (gan_run / REPORT_FILE).read_text()
    assert "gan-accel train-gan --dataset digits" in text  # the command as typed
    assert "samples/training.gif" in page and re.search(r'src="samples/step_\d+\.png"', page)
    assert 'src="plots/' in page
    assert "fid_floor" in text and "[" in text  # the evaluation table with intervals and floors
    assert "best_generator/" in text and "gan-accel sample-gan --generator" in text
    assert str(gan_run / "best_generator") in text


def test_gan_report_refreshed_at_each_evaluation(gan_run):
    """Written after the evaluation at step 2 (before the end), then again at the end."""
    during = [p for p in GAN_PAGES.values() if "Evaluations" in p and "training.gif" not in p]
    assert during, "no page was written between the first evaluation and the end"
    assert "training.gif" in GAN_PAGES[len(GAN_PAGES) - 1]


def test_report_is_a_declared_output(gan_run, tmp_path):
    from gan_accel.data.paths import run_replaced_names

    assert REPORT_FILE in run_replaced_names()


def test_report_written_atomically(tmp_path, monkeypatch):
    """A failure mid-write leaves the previous page whole and no temporary file behind the name."""
    folder = tmp_path / "run"
    folder.mkdir()
    write_report(folder, "gan")
    before = (folder / REPORT_FILE).read_text()

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(report.os, "replace", broken)
    with pytest.raises(UserError, match=f"could not write report {folder / REPORT_FILE} .disk full"):
        write_report(folder, "gan", ReportInputs("gan-accel train-gan --new"))
    assert sorted(p.name for p in folder.iterdir()) == [REPORT_FILE]  # no temporary file left
    assert (folder / REPORT_FILE).read_text() == before
    warned = []
    assert report.write_report_safely(folder, "gan", None, warned.append) is None and warned


ODD = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=st.lists(ODD, max_size=4), value=ODD, note=ODD)
def test_user_strings_are_escaped(tmp_path, argv, value, note):
    """Whatever the command line, config values, notes and result labels hold, the page's text
    shows them as they are and no tag or attribute comes from them."""
    folder = tmp_path / "odd"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "config.json").write_text(report.json.dumps({"output_dir": value, value: 1}))
    (folder / "eval_results.json").write_text(
        report.json.dumps(
            {
                "final": {"eval/accuracy": 0.5},
                "label_names": [value, "b"],
                "confusion": [[1, 0], [0, 1]],
                "examples": [{"text": value, "label": value, "predicted": "b", "probability": 0.5}],
            }
        )
    )
    command = command_line("train-gan", ["--output_dir", value, *argv])
    page = write_report(folder, "classifier", ReportInputs(command, (note,))).read_text()
    tags = re.findall(r"<([a-zA-Z!/][^>]*)>", page)
    allowed = {"!DOCTYPE", "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "pre", "table", "tr"}
    allowed |= {"th", "td", "details", "summary", "a", "img", "figure", "figcaption", "div", "b", "i"}
    for tag in tags:
        assert tag.lstrip("/").split()[0] in allowed, tag
    parsed = references(folder / REPORT_FILE)
    text = "".join(parsed.text)
    for shown in (command, note, html.unescape(html.escape(value))):
        # Line ends read back as "\n", as a browser reads them too.
        assert shown.replace("\r\n", "\n").replace("\r", "\n").strip() in text
    assert all((folder / ref).exists() for ref in parsed.refs)


def test_command_line_masks_secrets():
    line = command_line("train-gan", ["--hub_token", "hf_abc", "--hub-token=hf_def", "--dataset", "a b"])
    assert "hf_abc" not in line and "hf_def" not in line and "'a b'" in line


def test_cyclegan_report(tmp_path):
    from benchmarks.common import reset_accelerate

    data = make_domains(tmp_path / "data")
    out = tmp_path / "cyc"
    reset_accelerate()
    argv = [
        *TINY_CYCLEGAN,
        "--dataset",
        "folder",
        "--data_dir",
        str(data),
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
    ]
    assert load_script("train_cyclegan").main(argv) == 0
    text = assert_self_contained(out)
    assert "gan-accel translate --generator" in text and "Translations" in text
    assert re.search(r'src="samples/step_\d+\.png"', (out / REPORT_FILE).read_text())


@pytest.fixture(scope="module")
def classifier_setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report_classifier")
    corpus = make_corpus(folder / "data")
    tiny = make_tiny(folder / "tiny", corpus["train"])
    # One evaluation, at the end: model/ is then the final model, whose predictions are recorded.
    run = train_in_process(train_argv(corpus, tiny, folder / "clf", "--max_steps", "4", "--eval_every", "4"))
    return {"corpus": corpus, "tiny": tiny, "teacher": run / "model", "folder": folder, "run": run}


def test_classifier_report(classifier_setup):
    run = classifier_setup["run"]
    text = assert_self_contained(run)
    assert "Accuracy" in text and "Confusion matrix" in text and "gan-accel predict --model" in text
    assert "Started from Python" in text  # no command line: trained by the library's function
    assert_predictions_shown(run, classifier_setup["corpus"]["validation"], text)


def assert_predictions_shown(run: Path, validation: Path, text: str) -> None:
    """eval_results.json holds the first validation rows in the file's order (not the evaluation
    loader's, which runs longest first), each with its label, prediction and probability, and
    the page shows them, each wrong prediction marked."""
    from gan_accel.classifier.evaluate import EXAMPLES

    examples = json.loads((run / "eval_results.json").read_text())["examples"]
    rows = [json.loads(line) for line in validation.read_text().splitlines()][:EXAMPLES]
    assert [(e["text"], e["label"]) for e in examples] == [(r["text"], r["label"]) for r in rows]
    assert all(0 < e["probability"] <= 1 for e in examples)
    assert "A few validation examples" in text
    for e in examples:
        assert e["text"] in text and e["predicted"] in text
    page = (run / REPORT_FILE).read_text()
    wrong = sum(e["predicted"] != e["label"] for e in examples)
    assert page.count(report_tasks.WRONG) == wrong


def test_recorded_examples_are_what_predict_says(classifier_setup):
    """The examples recorded at the end of the run are what ``gan-accel predict`` answers for the
    same texts with the exported model (here the final one: a single evaluation, at the end)."""
    from gan_accel.classifier.predict import PredictArguments, predict

    run = classifier_setup["run"]
    results = json.loads((run / "eval_results.json").read_text())
    assert results["best"]["step"] == results["final"]["step"]
    examples = results["examples"]
    rows = predict(PredictArguments(model=str(run / "model"), text=[e["text"] for e in examples], cpu=True))
    assert [r["label"] for r in rows] == [e["predicted"] for e in examples]
    assert [r["score"] for r in rows] == pytest.approx([e["probability"] for e in examples], abs=1e-5)


def test_validation_examples_are_what_predict_says_of_the_exported_model(classifier_setup, tmp_path):
    """validation_examples() (one padded batch, the run's Accelerator) gives each text the label and
    probability ``gan-accel predict`` gives it with the exported model. Large weights give every
    text its own probability and the texts' lengths are out of order, so a prediction paired with
    another text, or taken in the loader's longest-first order, would show."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from transformers import DataCollatorWithPadding

    from classifier_fixtures import reset_accelerate
    from gan_accel.classifier.config import ClassifierModelArguments
    from gan_accel.classifier.data import EncodedDataset
    from gan_accel.classifier.evaluate import TEXT_CHARS, validation_examples
    from gan_accel.classifier.model import export_model, load_model, load_tokenizer
    from gan_accel.classifier.predict import PredictArguments, predict

    args = ClassifierModelArguments(model_name_or_path=str(classifier_setup["tiny"]))
    set_seed(0)
    names = ["a", "b", "c"]
    model = load_model(args, names)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(std=0.3)
    tokenizer = load_tokenizer(args)
    texts = ["good", "the plot was dull and the cast was poor", "bad", " ".join(["a great film"] * 30), "fine"]
    encoded = tokenizer(texts, truncation=True, max_length=32)
    dataset = EncodedDataset({k: encoded[k] for k in ("input_ids", "attention_mask")}, [0, 1, 2, 0, 1])
    reset_accelerate()
    examples = validation_examples(
        Accelerator(cpu=True), model, dataset, DataCollatorWithPadding(tokenizer), texts, names
    )
    reset_accelerate()
    export_model(model, tokenizer, tmp_path / "model")
    rows = predict(PredictArguments(model=str(tmp_path / "model"), text=texts, max_length=32, cpu=True))
    assert [e["label"] for e in examples] == ["a", "b", "c", "a", "b"]
    assert [e["predicted"] for e in examples] == [r["label"] for r in rows]
    assert [e["probability"] for e in examples] == pytest.approx([r["score"] for r in rows], abs=1e-6)
    assert len({round(r["score"], 4) for r in rows}) == len(texts)  # each text its own probability
    long = examples[3]["text"]
    assert len(long) == TEXT_CHARS and texts[3].startswith(long[:-1]) and long.endswith("\u2026")


def test_distill_report(classifier_setup):
    out = distill_in_process(
        distill_argv(
            classifier_setup, classifier_setup["folder"] / "student", "--student_from_teacher", "--max_steps", "2"
        )
    )
    text = assert_self_contained(Path(out))
    assert "teacher" in text and "Confusion matrix" in text
    assert_predictions_shown(Path(out), classifier_setup["corpus"]["validation"], text)


def test_report_needs_no_network_and_survives_a_move(gan_run, tmp_path):
    """Relative paths: the moved folder's page still finds every image."""
    moved = shutil.copytree(gan_run, tmp_path / "moved")
    assert_self_contained(moved)
    assert os.path.isfile(moved / "samples" / "training.gif")
