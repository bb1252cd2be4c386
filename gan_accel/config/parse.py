"""From flags and ``--config FILE`` to typed dataclasses: the parser every script uses
(HfArgumentParser with our field metadata kept out of argparse), the file's values checked against
the fields' types, old spellings of renamed flags, and one-line errors for unknown flags."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import inspect
import json
import math
import typing
from pathlib import Path
from typing import Optional, Sequence, Tuple, Type

import yaml

from ..errors import ConfigError, UserError
from .fields import RESUME_METADATA


def load_config_file(path: str) -> dict:
    """Read a YAML or JSON config file into a flat ``{field: value}`` dict."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"--config {path}: is a folder; pass a YAML or JSON file of flag values")
    if not p.is_file():
        raise UserError(f"--config {path}: file not found; pass a YAML or JSON file of flag values")
    try:
        text = p.read_text()
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as err:
        detail = str(err).replace("\n", " ")
        raise UserError(f"--config {path}: not a readable YAML/JSON file ({detail}); fix the file syntax") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"--config {path}: expected a mapping of flag names to values, got {type(data).__name__}")
    return data


def parse_config(types: Tuple[Type, ...], argv: Optional[Sequence[str]], description: str = "") -> tuple:
    """Parse ``argv`` into one instance of each dataclass in ``types``.

    ``--config FILE`` supplies defaults; explicit flags win. Unknown keys in the file are an error
    naming the file and the key.
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.error = _one_line_error  # e.g. --config -x: argparse would print its usage block first
    known, _ = pre.parse_known_args(argv)

    parser = _parser_class()(types, description=description, formatter_class=_HelpFormatter)
    parser.error = _one_line_error  # argparse would print the whole usage block before the error
    parser.add_argument(
        "--config", default=None, help="YAML or JSON file of flag values (flags on the command line override it)."
    )
    if known.config:
        values = _rename_aliases(load_config_file(known.config), types)
        fields = {f.name for t in types for f in dataclasses.fields(t)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UserError(
                f"--config {known.config}: unknown key(s) {', '.join(unknown)}; run with --help for the valid flags"
            )
        values = _typed_file_values(types, values, known.config)
        parser.set_defaults(**values)
        # set_defaults does not lift required=True, so a required field given in the file must be.
        for action in parser._actions:
            if action.dest in values:
                action.required = False
    try:
        parsed = parser.parse_args_into_dataclasses(
            args=list(argv) if argv is not None else None, return_remaining_strings=True
        )
    except (TypeError, ValueError) as err:
        if isinstance(err, UserError):
            raise
        raise UserError(f"invalid configuration: {err}") from None
    if parsed[-1]:
        raise UserError(unknown_flags_message(parsed[-1], [o for a in parser._actions for o in a.option_strings]))
    configs = tuple(parsed[: len(types)])
    for cfg in configs:
        for name, hint in _field_types(type(cfg)).items():
            value = getattr(cfg, name)
            if hint is float and isinstance(value, float) and not math.isfinite(value):
                # Flags and YAML both accept nan/inf; no setting of ours means anything with them.
                raise ConfigError(f"--{name} must be a finite number; got {value}")
    return configs


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows a flag's default unless it is None or the help already says it: a None
    default means "not given" (the help says what happens then), and a help that names its own
    default ("default: the generator's") read "(default: the generator's). (default: None)".

    The description (a script's docstring) keeps its lines: re-wrapped, its example commands ran
    together into one paragraph. Only the description; the flags' help is still wrapped."""

    def _fill_text(self, text, width, indent):
        return super()._fill_text(inspect.cleandoc(text), width, indent)

    def _get_help_string(self, action):
        if action.default is None or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _parser_class():
    """HfArgumentParser, with our own field metadata (the resume policy, what a run reads) kept
    out of argparse."""
    import copy
    from types import MappingProxyType

    from transformers import HfArgumentParser

    class Parser(HfArgumentParser):
        @staticmethod
        def _parse_dataclass_field(parser, f: dataclasses.Field):
            f = copy.copy(f)
            f.metadata = MappingProxyType(
                {k: v for k, v in f.metadata.items() if k not in (*RESUME_METADATA, "reads")}
            )
            return HfArgumentParser._parse_dataclass_field(parser, f)

    return Parser


def _field_types(cls: Type) -> dict:
    """``{field: type}`` with ``Optional[X]`` reduced to ``X`` (annotations are strings here)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        out[f.name] = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
    return out


def _typed_file_values(types: Tuple[Type, ...], values: dict, path: str) -> dict:
    """Check a config file's values against the fields' types: argparse converts only string
    defaults, so without this ``max_steps: 2.7`` would run as a float count of steps."""
    hints = {name: hint for t in types for name, hint in _field_types(t).items()}
    out = dict(values)
    for key, value in values.items():
        hint = hints.get(key)
        bad = None
        if value is None or hint not in (int, float, bool, str):
            continue
        if hint is bool and not isinstance(value, bool):
            bad = "true or false"
        elif hint is int and not (isinstance(value, int) and not isinstance(value, bool)):
            if isinstance(value, float) and value.is_integer():
                out[key] = int(value)
            else:
                bad = "an integer"
        elif hint is float and not isinstance(value, bool) and isinstance(value, (int, float, str)):
            try:
                out[key] = float(value)  # YAML reads 1e-4 (no dot) as a string
            except ValueError:
                bad = "a number"
        elif hint is float:
            bad = "a number"
        elif hint is str and not isinstance(value, str):
            bad = "a string"
        if bad:
            raise UserError(f"--config {path}: {key} must be {bad}; got {value!r}")
        if hint is float and not math.isfinite(out[key]):
            raise UserError(f"--config {path}: --{key} must be a finite number; got {value!r}")
    return out


def field_aliases(types: Tuple[Type, ...]) -> dict:
    """Old spellings of renamed fields (``metadata["aliases"]``, e.g. ``--eval_steps``) -> field name."""
    return {
        alias.lstrip("-"): f.name
        for t in types
        for f in dataclasses.fields(t)
        for alias in f.metadata.get("aliases", [])
    }


def _rename_aliases(values: dict, types: Tuple[Type, ...]) -> dict:
    """A config file may use a field's old spelling, as the command line may."""
    aliases = field_aliases(types)
    return {aliases.get(key, key): value for key, value in values.items()}


def unknown_flags_message(remaining: Sequence[str], options: Sequence[str]) -> str:
    """The flags argparse did not know, each with the closest valid flag when one is close."""
    flags = [arg.split("=", 1)[0] for arg in remaining if arg.startswith("-")]
    if not flags:
        return f"unexpected argument(s) {' '.join(remaining)}; run with --help for the valid flags"
    parts = []
    for flag in flags:
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        parts.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
    return f"unknown flag {', '.join(parts)}; run with --help for the valid flags"


def _one_line_error(message: str):
    raise UserError(f"{message}; run with --help for the valid flags")
