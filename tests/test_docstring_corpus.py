"""The real-text benchmark corpus: Python's own docstrings by package, built offline, reproducibly,
with at least 3 labels, thousands of examples, long and short texts, no text in both splits."""

import csv
import json

from benchmarks.corpora.docstrings import PACKAGES, make_docstring_corpus, make_docstring_rows, split_rows


def test_rows_are_real_variable_length_and_unambiguous():
    rows = make_docstring_rows()
    labels = {r["label"] for r in rows}
    assert len(labels) >= 3 and labels <= set(PACKAGES)
    assert len(rows) >= 2000
    texts = [r["text"] for r in rows]
    assert len(set(texts)) == len(texts)
    words = sorted(len(t.split()) for t in texts)
    assert words[len(words) // 2] < 30 and words[-len(words) // 20] > 100  # mostly short, a long tail


def test_split_is_stratified_seeded_and_disjoint(tmp_path):
    rows = make_docstring_rows()
    train, val = split_rows(rows, 0.2, seed=0)
    assert (train, val) == split_rows(rows, 0.2, seed=0) and val != split_rows(rows, 0.2, seed=1)[1]
    assert not {r["text"] for r in train} & {r["text"] for r in val} and len(train) + len(val) == len(rows)
    for label in PACKAGES:
        n_val, n_all = sum(r["label"] == label for r in val), sum(r["label"] == label for r in rows)
        assert abs(n_val - 0.2 * n_all) <= 1

    files = make_docstring_corpus(tmp_path)
    assert len(list(csv.DictReader(files["train"].open()))) == len(train)
    assert [json.loads(line) for line in files["validation"].read_text().splitlines()] == val
