"""The stdlib docstring corpus: labels by module family, tests and duplicates left out, balanced
classes, a validation split that does not depend on the cap, and the real thing is big enough."""

from pathlib import Path

from benchmarks.corpora.stdlib import FAMILIES, collect, make_corpus, split


def write(root: Path, relative: str, *docs: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(f'def f{i}():\n    """{d}"""\n' for i, d in enumerate(docs)))


def test_collect_labels_by_family_and_drops_tests_and_shared_texts(tmp_path):
    write(tmp_path, "email/parser.py", "Parse a message from a string of bytes.", "Too short.")
    write(
        tmp_path, "asyncio/tasks.py", "Schedule the coroutine on the running loop.", "Return the value of the object."
    )
    write(tmp_path, "tkinter/__init__.py", "Return the value of the object.")  # in two families: dropped
    write(tmp_path, "unittest/test/test_case.py", "A test of the test case itself here.")  # tests: left out
    write(tmp_path, "json/decoder.py", "Decode a JSON document into Python objects.")  # no family: left out
    write(tmp_path, "site-packages/email/x.py", "An installed package, not the stdlib.")
    assert collect(tmp_path) == [
        {"text": "Parse a message from a string of bytes.", "label": "network"},
        {"text": "Schedule the coroutine on the running loop.", "label": "concurrency"},
    ]


def test_split_is_balanced_and_validation_does_not_move_with_the_cap():
    rows = [{"text": f"{label} text number {i}", "label": label} for label in ("a", "b") for i in range(100)]
    small, large = split(rows, 20, 0.2, seed=0), split(rows, 100, 0.2, seed=0)
    for part in (small, large):
        labels = [r["label"] for r in part["train"] + part["validation"]]
        assert labels.count("a") == labels.count("b")
    assert {r["text"] for r in small["validation"]} <= {r["text"] for r in large["validation"]}
    assert 0.1 < len(large["validation"]) / 200 < 0.3


def test_the_real_corpus_has_four_balanced_classes_of_real_text(tmp_path):
    files = make_corpus(tmp_path, per_class=500)
    counts = files["counts"]
    assert set(counts["train"]) == set(FAMILIES)
    totals = [counts["train"][k] + counts["validation"][k] for k in FAMILIES]
    assert totals == [500] * 4  # this Python ships enough docstrings of every family
    lines = files["train"].read_text().splitlines()
    assert lines[0] == "text,label" and len(lines) > 1000
