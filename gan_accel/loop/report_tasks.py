"""The parts of ``report.html`` (:mod:`.report`) that only one task has: a GAN's grids, kept
generator and sampling command; a CycleGAN's translations; a classifier's (or a distilled
student's) accuracy, confusion matrix and a few predictions. Each reads what its task already writes."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Callable, Dict, List, Optional

from .report import EVAL_PREFIX, ReportInputs, Section, esc, fmt, image, pre, read_json, read_records, table

GRID_GLOB = "step_*.png"  # samples/step_000040.png (a set-aside step_*.png.dropped is not matched)


def latest_grid(folder: Path) -> Optional[Path]:
    grids = sorted((folder / "samples").glob(GRID_GLOB))
    return grids[-1] if grids else None


def quoted(folder: Path, *parts: str) -> str:
    return shlex.quote(str(Path(folder, *parts)))


# ---- GAN -----------------------------------------------------------------------------------
def gan_sections(folder: Path) -> List[Optional[Section]]:
    return [gan_samples(folder), gan_kept(folder), gan_sampling(folder)]


def gan_samples(folder: Path) -> Optional[Section]:
    parts = []
    gif = folder / "samples" / "training.gif"
    if gif.is_file():
        parts.append(image(folder, gif, "samples/training.gif: the same noise at each grid, through the run"))
    grid = latest_grid(folder)
    if grid is not None:
        parts.append(image(folder, grid, f"the latest grid, samples/{grid.name}"))
    return ("Samples", f"<div class=samples>{''.join(parts)}</div>") if parts else None


def gan_kept(folder: Path) -> Optional[Section]:
    score = read_json(folder / "best_generator" / "score.json")
    final = (folder / "generator").is_dir()
    if not isinstance(score, dict) and not final:
        return None
    lines = []
    if isinstance(score, dict):
        metric = str(score.get("metric", "eval/fid"))
        lines.append(
            f"<p><b>best_generator/</b>: the generator evaluated at step {fmt(score.get('step'))}, "
            f"{esc(metric.removeprefix(EVAL_PREFIX))} {fmt(score.get('value'))}. Kept because it scored the "
            "lowest of the run's evaluations, or because a later generator's 95% interval reached that "
            "lowest value (a tie: the later one trained longer, so it took the place).</p>"
        )
    if final:
        lines.append("<p><b>generator/</b>: the EMA generator at the end of the run.</p>")
    verdict = best_against_last(folder, score)
    if verdict:
        lines.append(f"<p>{esc(verdict)}</p>")
    return "The kept generator", "".join(lines)


def best_against_last(folder: Path, score) -> Optional[str]:
    """The closing verdict the run printed (which export scored better), from the last FID logged."""
    if not isinstance(score, dict) or not (folder / "generator").is_dir():
        return None
    from ..gan.photo_run import best_vs_last

    evaluated = [r for r in read_records(folder) if isinstance(r.get("eval/fid"), (int, float))]
    if not evaluated:
        return None
    last = evaluated[-1]
    try:
        return best_vs_last(score, float(last["eval/fid"]), int(last.get("step", 0)))
    except (KeyError, TypeError, ValueError):
        return None


def gan_sampling(folder: Path) -> Section:
    name = "best_generator" if (folder / "best_generator").is_dir() else "generator"
    command = (
        f"gan-accel sample-gan --generator {quoted(folder, name)} --num_images 64 "
        f"--grid {quoted(folder, 'png', 'grid.png')} --output_dir {quoted(folder, 'png')}"
    )
    later = "" if (folder / name).is_dir() else "<p class=note>generator/ is written at the end of the run.</p>"
    return "How to sample it", pre(
        command
    ) + later + "<p class=note>gan-accel sample-gan --help: truncation, interpolations, class grids.</p>"


# ---- CycleGAN ------------------------------------------------------------------------------
def cyclegan_sections(folder: Path) -> List[Optional[Section]]:
    parts = []
    grid = latest_grid(folder)
    if grid is not None:
        parts.append(
            image(
                folder,
                grid,
                f"samples/{grid.name}; each row: real A | A to B | back to A | real B | B to A | back to B",
            )
        )
    command = (
        f"gan-accel translate --generator {quoted(folder, 'generator_A2B')} --input_dir YOUR_A_IMAGES "
        f"--output_dir {quoted(folder, 'translated_A2B')}"
    )
    usage = pre(command) + "<p class=note>generator_B2A/ translates the other way.</p>"
    return [("Translations", "".join(parts)) if parts else None, ("How to translate", usage)]


# ---- classifier and distillation -----------------------------------------------------------
def accuracy_rows(results: dict, project: str) -> List[List[str]]:
    if project == "distill":
        student = results.get("student") or {}
        models = {"student, final": student.get("final"), "student, best (model/)": student.get("best")}
        models["teacher"] = results.get("teacher")
    else:
        models = {"final": results.get("final"), "best (model/)": results.get("best")}
    rows = []
    for name, record in models.items():
        if isinstance(record, dict) and record:
            keys = ("step", "eval/accuracy", "eval/f1_macro", "eval/loss")
            rows.append([esc(name), *(fmt(record.get(k)) for k in keys)])
    return rows


def confusion_table(results: dict) -> str:
    matrix = results.get("confusion")
    names = results.get("label_names") or []
    if not isinstance(matrix, list) or not matrix:
        return ""
    names = [str(n) for n in names] if len(names) == len(matrix) else [str(i) for i in range(len(matrix))]
    rows = [[esc(names[i]), *(fmt(c) for c in row)] for i, row in enumerate(matrix)]
    return "<p>Confusion matrix of the final evaluation (rows: true label, columns: predicted):</p>" + table(
        ["true \\ predicted", *names], rows
    )


WRONG = "<b>wrong</b>"  # the mark of a wrong prediction in the examples' table


def prediction_table(results: dict) -> str:
    """The validation examples the run recorded at its end (``examples`` of ``eval_results.json``:
    text, label, predicted, probability), each wrong prediction marked."""
    examples = results.get("examples")
    examples = [e for e in examples if isinstance(e, dict)] if isinstance(examples, list) else []
    if not examples:
        return ""
    rows = [
        [
            esc(e.get("text", "")),
            esc(e.get("label", "")),
            fmt(e.get("predicted")),
            fmt(e.get("probability")),
            WRONG if e.get("predicted") != e.get("label") else "right",
        ]
        for e in examples
    ]
    return "<p>A few validation examples (the first of the file) and the final model's predictions:</p>" + table(
        ["text", "label", "predicted", "probability", ""], rows
    )


def classifier_sections(folder: Path, project: str) -> List[Optional[Section]]:
    results = read_json(folder / "eval_results.json")
    sections: List[Optional[Section]] = []
    if isinstance(results, dict):
        rows = accuracy_rows(results, project)
        body = table(["model", "step", "accuracy", "f1_macro", "loss"], rows) if rows else ""
        body += confusion_table(results) + prediction_table(results)
        sections.append(("Accuracy", body))
    command = f"gan-accel predict --model {quoted(folder, 'model')} --text 'a sentence to classify'"
    sections.append(("How to use the model", pre(command)))
    return sections


SECTIONS: Dict[str, Callable[[Path], List[Optional[Section]]]] = {
    "gan": gan_sections,
    "cyclegan": cyclegan_sections,
    "classifier": lambda folder: classifier_sections(folder, "classifier"),
    "distill": lambda folder: classifier_sections(folder, "distill"),
}


def task_sections(project: str, folder: Path, inputs: ReportInputs) -> List[Optional[Section]]:
    """The sections of ``project``'s runs (none for a task without its own)."""
    make = SECTIONS.get(project)
    return make(Path(folder)) if make is not None else []
