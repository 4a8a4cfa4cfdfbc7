"""`--help` of every command shows every option's default and an example."""

from __future__ import annotations

import pytest

from engine.cli import _parser, main
from engine.cli.help_text import every_parser

PARSERS = dict(every_parser(_parser()))


def test_every_command_is_covered():
    assert {"", "generate", "lab quant", "lab speculative", "sessions", "export"} <= PARSERS.keys()


@pytest.mark.parametrize("path", sorted(PARSERS), ids=lambda p: p or "logitscope")
def test_every_option_shows_its_default_and_the_command_an_example(path):
    parser = PARSERS[path]
    text = parser.format_help()
    assert "\nexample:\n  logitscope " in text
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "version"):
            continue
        formatter = parser._get_formatter()
        line = formatter._format_action(action)
        if action.required:
            assert "(default" not in line, line
        else:
            assert "(default: " in " ".join(line.split()), line


def test_generate_help_says_the_sampling_defaults(capsys):
    from engine.run.settings import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, DEFAULT_TOP_N

    with pytest.raises(SystemExit) as e:
        main(["generate", "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"0 = greedy (default: {DEFAULT_TEMPERATURE})" in out
    assert f"most tokens to generate (default: {DEFAULT_MAX_TOKENS})" in out
    assert f"alternatives kept (default: {DEFAULT_TOP_N})" in out
    assert "--model MODEL MLX folder, .gguf file or name (default: the default model" in out
    assert "--raw raw completion, no chat template (default: off)" in out
