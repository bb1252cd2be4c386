import json
from dataclasses import dataclass, field

import pytest

from gan_accel.config import RunArguments, parse_config, resume_incompatibilities
from gan_accel.errors import ConfigError, UserError


@dataclass
class Extra:
    lr: float = field(default=1e-3, metadata={"help": "learning rate"})

    def __post_init__(self):
        if self.lr <= 0:
            raise ConfigError(f"--lr must be > 0; got {self.lr}")


def test_cli_overrides_config_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("output_dir: from_file\nlr: 0.5\nseed: 7\n")
    run, extra = parse_config((RunArguments, Extra), ["--config", str(cfg), "--seed", "9"])
    assert run.output_dir == "from_file" and extra.lr == 0.5 and run.seed == 9


def test_json_config_and_unknown_key(tmp_path):
    good = tmp_path / "c.json"
    good.write_text(json.dumps({"output_dir": "x", "lr": 0.1}))
    _, extra = parse_config((RunArguments, Extra), ["--config", str(good)])
    assert extra.lr == 0.1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"output_dir": "x", "learning_rat": 0.1}))
    with pytest.raises(UserError, match="unknown key.*learning_rat"):
        parse_config((RunArguments, Extra), ["--config", str(bad)])


def test_malformed_and_missing_config_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("output_dir: [unclosed\n")
    with pytest.raises(UserError, match="bad.yaml.*YAML/JSON"):
        parse_config((RunArguments,), ["--config", str(bad)])
    with pytest.raises(UserError, match="file not found"):
        parse_config((RunArguments,), ["--config", str(tmp_path / "nope.yaml")])


@pytest.mark.parametrize(
    "flag,value,match",
    [
        ("--lr", "-1", "--lr must be > 0"),
        ("--gradient_accumulation_steps", "0", "--gradient_accumulation_steps must be > 0"),
        ("--log_every", "0", "--log_every must be > 0"),
    ],
)
def test_validation_names_the_flag(flag, value, match):
    with pytest.raises(ConfigError, match=match):
        parse_config((RunArguments, Extra), ["--output_dir", "o", flag, value])


def test_choice_validated_from_file_too(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("output_dir: o\nmixed_precision: fp8\n")
    with pytest.raises(ConfigError, match="--mixed_precision must be one of"):
        parse_config((RunArguments,), ["--config", str(cfg)])


def test_resume_incompatibilities_ignore_safe_fields():
    from gan_accel.config import resume_policy
    from gan_accel.gan.config import GAN_CONFIG_TYPES

    policy = resume_policy(*GAN_CONFIG_TYPES, RunArguments)
    saved = {"lr": 1.0, "max_steps": 10, "arch": "dcgan"}
    assert resume_incompatibilities(saved, {"lr": 1.0, "max_steps": 20, "arch": "dcgan"}, policy) == []
    diffs = resume_incompatibilities(saved, {"lr": 1.0, "max_steps": 10, "arch": "resnet"}, policy)
    assert diffs == ["--arch 'dcgan' -> 'resnet'"]
