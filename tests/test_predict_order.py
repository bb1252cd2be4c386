"""predict.py runs texts longest first (less padding) and must still answer in input order, each
row with its own text's label and score: the same as predicting every text on its own."""

import json

import pytest

from classifier_fixtures import load_script, make_corpus, make_tiny, single_thread  # noqa: E402

one_thread = pytest.fixture(scope="module", autouse=True)(single_thread)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """An untrained classifier export (random head): its scores differ from text to text, which is
    all an order check needs."""
    import torch
    from accelerate.utils import set_seed

    from gan_accel.classifier.config import ClassifierModelArguments
    from gan_accel.classifier.model import export_model, load_model, load_tokenizer

    folder = tmp_path_factory.mktemp("predict")
    tiny = make_tiny(folder / "tiny", make_corpus(folder / "data", n_train=60, n_val=5)["train"])
    args = ClassifierModelArguments(model_name_or_path=str(tiny))
    set_seed(0)
    model = load_model(args, ["a", "b", "c"])
    # Large weights in EVERY matrix, not only the head: with the init's small weights the [CLS]
    # output hardly depends on the text, so two texts' scores could fall within 1e-5 of each other
    # (the tiny tokenizer's ids vary from run to run, and about 1 run in 6 did). With std 0.3 the
    # closest two of these texts stay >= 1e-3 apart.
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(std=0.3)
    export_model(model, load_tokenizer(args), folder / "model")
    return folder / "model"


def predict_rows(model, texts, *extra):
    from gan_accel.classifier.predict import PredictArguments, predict

    return predict(PredictArguments(model=str(model), text=texts, cpu=True, **dict(extra)))


def test_predictions_come_back_in_input_order(classifier):
    # Lengths out of order on purpose: sorting them longest first permutes the batches.
    texts = [
        "good",
        "the movie was a great film with a lovely ending and a brilliant cast",
        "bad plot",
        "dull",
        "a wonderful story and an excellent actress in the last scene of the film",
        "the end was poor",
    ]
    rows = predict_rows(classifier, texts, ("batch_size", 2))
    alone = [predict_rows(classifier, [t])[0] for t in texts]
    assert [r["text"] for r in rows] == texts
    assert [r["label"] for r in rows] == [a["label"] for a in alone]
    assert [r["score"] for r in rows] == pytest.approx([a["score"] for a in alone], abs=1e-5)
    scores = sorted(a["score"] for a in alone)  # distinct well beyond the tolerance: a mix-up could not hide
    assert min(b - a for a, b in zip(scores, scores[1:])) > 1e-4


def test_predict_script_keeps_input_order_in_its_file(classifier, tmp_path):
    texts = ["a b c d e f g h", "a", "a b c d", "a b"]
    (tmp_path / "in.txt").write_text("\n".join(texts) + "\n")
    out = tmp_path / "preds.jsonl"
    argv = [
        "--model",
        str(classifier),
        "--input_file",
        str(tmp_path / "in.txt"),
        "--output_file",
        str(out),
        "--batch_size",
        "3",
        "--cpu",
    ]
    assert load_script("predict").main(argv) == 0
    assert [json.loads(line)["text"] for line in out.read_text().splitlines()] == texts
