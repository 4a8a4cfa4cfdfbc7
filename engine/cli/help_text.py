"""What `--help` says beyond each option's own line: every option's default and
an example for every command. `finish(parser)` applies both to the whole tree
of commands once they are declared; the commands' modules only declare options.
"""

from __future__ import annotations

import argparse

# Help for options declared without it (the default is added to every line).
MISSING_HELP = {
    "--top-p": "nucleus sampling: keep the likeliest tokens up to this total probability (1 = off)",
    "--top-k": "keep only the K likeliest tokens (0 = off)",
    "--min-p": "drop tokens below this fraction of the likeliest one's probability (0 = off)",
    "--repetition-penalty": "divide the scores of tokens already seen by this (1 = off)",
    "--seed": "random seed of the sampler (the seed used is printed at the end)",
    "--max-tokens": "most tokens to generate",
    "--rounds": "rounds of each measurement (the best is kept)",
    "--json": "print JSON instead of text",
    "--model": "MLX folder, .gguf file or name",
    "path": "an exported session (.json)",
}
# What an option left unset means, where "none" would not say it.
UNSET_MEANS = {
    "--model": "the default model, SmolLM2-135M-Instruct",
    "--seed": "a new seed each run",
    "--endpoint": "a local model",
}

EXAMPLES = {
    "": [
        "logitscope generate --prompt 'What is the capital of France?'",
        "logitscope models",
        "logitscope sessions",
    ],
    "generate": [
        "logitscope generate --prompt 'What is the capital of France?' --temp 0 --max-tokens 32",
        "echo 'Tell a joke' | logitscope generate --prompt - --json --format openai",
        "logitscope generate --prompt Hi --endpoint http://127.0.0.1:8080/v1",
    ],
    "inspect": [
        "logitscope inspect --prompt 'The capital of France is' --raw --what lens",
        "logitscope inspect --prompt 'Name a colour.' --step 2 --what journey --temp 0.7",
        'logitscope inspect --prompt "$(cat notes.txt)" --what position --json',
    ],
    "lab": ["logitscope lab quant --prompt 'Why do ships float?' --bits 8,4"],
    "lab quant": ["logitscope lab quant --prompt 'Why do ships float?' --bits 8,4 --tokens 16"],
    "lab batch": ["logitscope lab batch --sizes 1,4 --tokens 8"],
    "lab cache": ["logitscope lab cache --rounds 2"],
    "lab speculative": ["logitscope lab speculative --prompt 'Count to ten.' --k 4"],
    "lab distill": [
        "logitscope lab distill --student ./my-4bit-copy --text notes.txt",
        "logitscope lab distill --teacher gemma3-270m --student ./small --text-str 'Hi.' --json",
    ],
    "lab distill-train": [
        "logitscope lab distill-train --steps 60",
        "logitscope lab distill-train --text story.txt --width 128 --tau 2 --alpha 0.9 --json",
    ],
    "lab calibrate": [
        "logitscope lab calibrate --limit 20",
        "logitscope lab calibrate --questions my_set.csv --samples 8 --json",
    ],
    "lab route": [
        "logitscope lab route --small SmolLM2-135M-Instruct --large my-larger-model --limit 50",
        "logitscope lab route --small A --large B --signal min_prob --threshold 0.2",
    ],
    "models": ["logitscope models --fetch-default", "logitscope models --json"],
    "sessions": ["logitscope sessions", "logitscope sessions --json"],
    "export": ["logitscope export 20250501-120000-ab12/1 --format csv -o run.csv"],
    "import": ["logitscope import session.json"],
    "bench": [
        "logitscope bench --max-tokens 32 --rounds 2",
        "logitscope bench --synthetic --max-tokens 200 --rounds 3",
        "logitscope bench --vs http://127.0.0.1:8080/v1 --max-tokens 32",
    ],
    "branch": [
        "logitscope branch 20250501-120000-ab12/1 --step 3 --token ' green'",
        "logitscope branch 20250501-120000-ab12/1 --step 0 --token-id 504 --json",
    ],
    "serve": [
        "logitscope serve --port 8080",
        "API_KEY=secret logitscope serve --host 0.0.0.0 --api-key-env API_KEY",
    ],
    "read": [
        "logitscope read notes.txt",
        "logitscope read --text 'The capital of Australia is Sydney.' --json",
        "cat essay.md | logitscope read - --context 'An essay on rivers:' --refuse-long",
    ],
    "sample": ["logitscope sample 20250501-120000-ab12/1 --step 2 --n 8 --temp 0.8 --seed 7"],
}


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks and ends every option's help with its
    default, unless the help already says what the default is."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.default is argparse.SUPPRESS or action.required:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text  # a required positional has no default
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            return text
        value = action.default
        shown = "none" if value is None or value == [] else "%(default)s"
        if value is None and action.option_strings:
            shown = UNSET_MEANS.get(action.option_strings[-1], shown)
        if isinstance(action, argparse._StoreTrueAction):
            shown = "off"
        return f"{text} (default: {shown})"


def _examples(lines: list[str]) -> str:
    return "example:\n" + "\n".join(f"  {line}" for line in lines)


def finish(parser: argparse.ArgumentParser, path: str = "") -> None:
    """Give `parser` and every subcommand's parser the formatter, help for
    options declared without any, and their examples (recursively)."""
    parser.formatter_class = Formatter
    if path in EXAMPLES:
        parser.epilog = _examples(EXAMPLES[path])
    for action in parser._actions:
        if action.help is None:
            key = action.option_strings[-1] if action.option_strings else action.dest
            action.help = MISSING_HELP.get(key, "")
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                finish(child, f"{path} {name}".strip())


def every_parser(parser: argparse.ArgumentParser, path: str = ""):
    """Yield (command path, parser) for `parser` and each subcommand under it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from every_parser(child, f"{path} {name}".strip())
