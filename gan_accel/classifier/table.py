"""Reading labelled tables (CSV, TSV, JSON Lines) with the line each row came from, and the row
checks that need it: a quote that swallows rows, missing or empty labels, empty texts.

Every error names the file and the line, because the alternative is silent: Python's ``csv``
reads an unclosed quote to the end of the file as one field (half the rows vanish and the label
column of the swallowing row becomes ``None``), and ``str(None)`` is a perfectly good class name.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from pathlib import Path
from typing import List, Optional, Sequence

from ..errors import UserError

log = logging.getLogger(__name__)
csv.field_size_limit(1 << 24)


class Table(list):
    """The rows of a file (a list of dicts, so callers treat it as one) plus ``lines``: the line
    of the file where each row starts, for errors that point at it. Rows from elsewhere (the Hub)
    are plain lists and are named by example number instead."""

    def __init__(self, rows: List[dict], lines: List[int]) -> None:
        super().__init__(rows)
        self.lines = lines


def where(rows: List[dict], i: int) -> str:
    """``line N`` of a file, or ``example N`` of rows that have no file lines."""
    lines = getattr(rows, "lines", None)
    return f"line {lines[i]}" if lines is not None else f"example {i + 1}"


def read_table(path: str, flag: str = "file") -> Table:
    """Rows of a ``.csv``/``.tsv`` (header line) or ``.jsonl``/``.json`` (one object per line)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--{flag} {path}: file not found")
    try:
        # utf-8-sig: spreadsheet programs start UTF-8 files with a BOM, which would otherwise
        # become part of the first column's name ("\ufefftext").
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"--{flag} {path}: unreadable ({err}); pass a UTF-8 .csv, .tsv or .jsonl file") from None
    if not text.strip():
        raise UserError(f"--{flag} {path}: the file is empty; it needs a header and at least one example")
    source = f"--{flag} {path}"
    if p.suffix.lower() in (".jsonl", ".json"):
        table = _parse_jsonl(text, source)
    else:
        table = _parse_csv(text, "\t" if p.suffix.lower() == ".tsv" else ",", source, p.suffix[1:].upper())
    if not table:
        raise UserError(f"{source}: no examples (only a header?); it needs at least one row")
    return table


def _parse_jsonl(text: str, source: str) -> Table:
    rows = []
    lines = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and friends, which splitlines()
    # also breaks at (read_text already turned \r\n into \n).
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{source}: line {number} is not JSON ({err.msg}); expected one object per line") from None
        if not isinstance(row, dict):
            raise UserError(f"{source}: line {number} is a {type(row).__name__}, expected a JSON object")
        rows.append(row)
        lines.append(number)
    return Table(rows, lines)


def _parse_csv(text: str, delimiter: str, source: str, kind: str) -> Table:
    """One row per non-blank line, with exactly the header's fields.

    A quoted field may legally span lines, but that is also exactly what an unclosed quote looks
    like (it runs on, swallowing rows, to the next quote or the end of the file), and the two
    cannot be told apart. So a row must fit on its line: rows are counted against lines, and the
    first row that spans several is an error naming where it starts. Texts with line breaks
    belong in JSON Lines, where they are escaped.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows = []
    lines = []
    header = None
    try:
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                break
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line
            if reader.line_num > start:
                raise UserError(
                    f"{source}: line {start} starts a quoted field that runs to line {reader.line_num} (an unclosed "
                    f"quote?); a row must fit on one line. Close the quote, or put texts with line breaks in a .jsonl file"
                )
            if header is None:
                header = fields
            elif len(fields) != len(header):
                raise UserError(
                    f"{source}: line {start} has {len(fields)} fields, the header has {len(header)}; quote texts that "
                    f"contain the delimiter {delimiter!r}"
                )
            else:
                rows.append(dict(zip(header, fields)))
                lines.append(start)
    except csv.Error as err:
        raise UserError(f"{source}: not a valid {kind} file (line {reader.line_num}: {err})") from None
    return Table(rows, lines)


# ---- row checks -------------------------------------------------------------------------------
def _missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):  # json.loads accepts NaN
        return True
    return isinstance(value, str) and not value.strip()


def check_rows(rows: List[dict], text_columns: Sequence[str], label_column: Optional[str], source: str) -> None:
    """Refuse a row without its columns or with a null/empty label; warn (with a count) about
    empty texts, which train the label on the special tokens alone."""
    empty = []
    for i, row in enumerate(rows):
        for column in [*text_columns, *([label_column] if label_column else [])]:
            if column not in row:
                raise UserError(
                    f"{source}: {where(rows, i)} has no {column!r} field; every row needs "
                    f"{', '.join(map(repr, [*text_columns, label_column]))}"
                )
        if label_column and _missing(row[label_column]):
            raise UserError(
                f"{source}: {where(rows, i)} has an empty label ({label_column!r} is "
                f"{row[label_column]!r}); give it a label or remove the row"
            )
        if _missing(row[text_columns[0]]):
            empty.append(where(rows, i))
    if empty:
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        log.warning(
            "%s: %d of %d examples have an empty text (%s); they are kept, and train on the label alone",
            source,
            len(empty),
            len(rows),
            shown,
        )
