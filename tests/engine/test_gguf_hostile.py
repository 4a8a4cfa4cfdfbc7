"""GGUF files with hostile tokenizer metadata: a 500 KB merge rule, merge rules naming
tokens that are not there, giant tokens, wrong item types, odd BOS tokens, huge names.

Each is refused before the tokenizer is rebuilt, with one ModelError line that quotes
at most a few dozen characters of the file; nothing reaches the `tokenizers`
library's own exceptions (which quote tokens whole) or its native panics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gguf
import pytest

import tests.gguf_fixtures as fixtures
from engine.errors import ModelError
from engine.models.gguf_check import check_gguf
from engine.models.gguf_tokenizer import build_tokenizer_json
from engine.models.gguf_vocab_check import MAX_TOKEN_CHARS

ROOT = Path(__file__).resolve().parents[2]
LONG = 500_000
SHORT_MESSAGE = 300  # characters: the file's own text is quoted at most ~60 of them


def _gguf(tmp_path, monkeypatch, tokens=None, merges=None, extra=(), skip=()) -> Path:
    """The fixtures' tiny llama GGUF with its vocabulary, merges or metadata changed.

    Args:
        tokens: a function of the fixture's token list giving the new one.
        merges: likewise for the merge rules.
        extra: (add method name, key, value) metadata entries added to the file.
        skip: fixture metadata left out (see write_tiny_gguf).
    """
    real_vocab, real_template = fixtures._vocab, gguf.GGUFWriter.add_chat_template

    def vocab():
        t, m = real_vocab()
        return (tokens or (lambda x: x))(t), (merges or (lambda x: x))(m)

    def template(self, value):
        real_template(self, value)
        for method, key, item in extra:
            getattr(self, method)(key, item)

    monkeypatch.setattr(fixtures, "_vocab", vocab)
    monkeypatch.setattr(gguf.GGUFWriter, "add_chat_template", template)
    path = fixtures.write_tiny_gguf(tmp_path / "hostile.gguf", skip_keys=skip)
    monkeypatch.undo()
    return path


def _refused(path: Path, match: str) -> str:
    with pytest.raises(ModelError, match=match) as info:
        check_gguf(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < SHORT_MESSAGE, message[:500]
    return message


def _meta(**changes) -> dict:
    tokens, merges = fixtures._vocab()
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.merges": merges,
        **changes,
    }


# -- the file: a 500 KB first merge rule ------------------------------------------
def test_a_500_kb_merge_rule_is_refused_in_one_short_line(tmp_path, monkeypatch):
    path = _gguf(tmp_path, monkeypatch, merges=lambda m: ["a" * LONG + " b", *m])
    message = _refused(path, "merge rule 0 is 500,002 characters long")
    assert message.count("a") < 100  # was the whole 500 KB token, twice


def test_the_command_line_says_it_in_one_line(tmp_path, monkeypatch):
    path = _gguf(tmp_path, monkeypatch, merges=lambda m: ["a" * LONG + " b", *m])
    env = {**os.environ, "LOGITSCOPE_DATA_DIR": str(tmp_path / "data")}
    env.pop("LOGITSCOPE_DEBUG", None)
    p = subprocess.run(
        [sys.executable, "-m", "engine", "generate", "--model", str(path), "--prompt", "hi"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if not ln.startswith("[")]  # progress
    assert len(lines) == 1 and lines[0].startswith("logitscope: error: "), p.stderr[-2000:]
    assert "merge rule 0" in lines[0] and "internal error" not in lines[0]
    assert len(p.stderr) < 2000  # was ~1 MB: a traceback plus the token twice


# -- merge rules -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "match"),
    [
        ("zzq qqz", r"merge rule 0 \('zzq qqz'\) needs 'zzq', not in the vocabulary"),
        ("h t", r"needs 'ht', not in the vocabulary"),  # the library panicked on this one
        ("ht", "merge rule 0 is 'ht', not 'a b'"),
        (" h", "not 'a b'"),
    ],
    ids=["unknown pieces", "merged piece unknown", "no space", "empty left"],
)
def test_merge_rules_must_join_two_tokens_into_a_third(tmp_path, monkeypatch, rule, match):
    _refused(_gguf(tmp_path, monkeypatch, merges=lambda m: [rule, *m]), match)


def test_merges_the_checks_pass_are_what_the_library_accepts():
    meta = _meta(**{"tokenizer.ggml.merges": ["h t"]})  # unchecked: the library's refusal
    with pytest.raises(ModelError, match="could not be rebuilt as a tokenizer") as info:
        build_tokenizer_json(meta)
    assert len(str(info.value)) < SHORT_MESSAGE


def test_the_librarys_own_message_is_cut_short():
    meta = _meta(**{"tokenizer.ggml.merges": ["q" * LONG + " h"]})  # unchecked path
    with pytest.raises(ModelError) as info:
        build_tokenizer_json(meta)
    assert len(str(info.value)) < SHORT_MESSAGE  # was an Exception quoting 500 KB


# -- the vocabulary ------------------------------------------------------------------------------
def test_a_giant_token_is_refused(tmp_path, monkeypatch):
    path = _gguf(tmp_path, monkeypatch, tokens=lambda t: [*t, "x" * LONG])
    _refused(path, f"is 500,000 characters long, more than the {MAX_TOKEN_CHARS:,}")


@pytest.mark.parametrize(
    ("method", "key", "value", "match"),
    [
        ("add_array", "tokenizer.ggml.scores", ["s"] * 264, "scores is not a list of numbers"),
        ("add_array", "tokenizer.ggml.scores", [0.5] * 3, "scores has 3 entries for 264"),
        ("add_string", "tokenizer.ggml.pre", "p" * LONG, "tokenizer.ggml.pre is 'ppp"),
        ("add_bool", "tokenizer.ggml.add_bos_token", True, None),
    ],
    ids=["text scores", "too few scores", "huge pre name", "plain BOS"],
)
def test_tokenizer_fields_are_checked(tmp_path, monkeypatch, method, key, value, match):
    path = _gguf(tmp_path, monkeypatch, extra=[(method, key, value)])
    if match is None:
        assert check_gguf(path).metadata[key] == value  # a usual BOS token is fine
    else:
        _refused(path, match)


def test_token_types_must_be_whole_numbers():
    from engine.models.gguf_vocab_check import check_vocabulary

    def fail(what):
        raise ModelError(what)

    meta = _meta(**{"tokenizer.ggml.token_type": [0.5] * 264})
    with pytest.raises(ModelError, match="token_type is not a list of whole numbers"):
        check_vocabulary(meta, fail)


@pytest.mark.parametrize("bos", ["", "a b", "$A", "$B:1"])
def test_a_bos_token_the_template_would_misread_is_refused(tmp_path, monkeypatch, bos):
    path = _gguf(
        tmp_path,
        monkeypatch,
        tokens=lambda t: [bos, *t[1:]],
        extra=[("add_bool", "tokenizer.ggml.add_bos_token", True)],
    )
    _refused(path, "BOS token .* cannot be prepended")
    raw = _meta(**{"tokenizer.ggml.bos_token_id": 0, "tokenizer.ggml.add_bos_token": True})
    raw["tokenizer.ggml.tokens"] = [bos, *raw["tokenizer.ggml.tokens"][1:]]
    with pytest.raises(ModelError, match="cannot be prepended"):  # was a panic for $B:1
        build_tokenizer_json(raw)


def test_a_long_tokenizer_kind_is_quoted_short(tmp_path, monkeypatch):
    monkeypatch.setattr(
        gguf.GGUFWriter,
        "add_tokenizer_model",
        lambda self, _m: self.add_string("tokenizer.ggml.model", "k" * LONG),
    )
    path = fixtures.write_tiny_gguf(tmp_path / "kind.gguf")
    monkeypatch.undo()
    _refused(path, "tokenizer kind 'kkk.*cannot be rebuilt")


# -- other metadata the messages quote ------------------------------------------------------
def test_a_huge_text_where_a_number_belongs_is_quoted_short(tmp_path, monkeypatch):
    extra = [("add_string", "llama.block_count", "9" * LONG)]
    path = _gguf(tmp_path, monkeypatch, extra=extra, skip=("block_count",))
    _refused(path, "llama.block_count is '999.*not a positive whole number")


def test_a_huge_architecture_name_is_quoted_short(tmp_path, monkeypatch):
    real = gguf.GGUFWriter.add_architecture
    monkeypatch.setattr(
        gguf.GGUFWriter,
        "add_architecture",
        lambda self: self.add_string("general.architecture", "y" * LONG),
    )
    path = fixtures.write_tiny_gguf(tmp_path / "arch.gguf")
    monkeypatch.setattr(gguf.GGUFWriter, "add_architecture", real)
    _refused(path, "general.architecture is 'yyy")


def test_a_huge_tensor_name_is_refused_before_any_message_quotes_it(tmp_path, monkeypatch):
    real = gguf.GGUFWriter.add_tensor

    def add(self, name, *args, **kwargs):
        return real(self, "z" * 10_000 if name == "output_norm.weight" else name, *args, **kwargs)

    monkeypatch.setattr(gguf.GGUFWriter, "add_tensor", add)
    path = fixtures.write_tiny_gguf(tmp_path / "name.gguf")
    monkeypatch.undo()
    _refused(path, "claims 10,000 bytes, more than the 256 allowed")  # was 65,536


# -- a bug in the engine reaches the user in one line ---------------------------------------------
def test_an_engine_bug_is_one_short_line_without_a_traceback(monkeypatch, capsys):
    from engine.process.worker import _Worker

    monkeypatch.delenv("LOGITSCOPE_DEBUG", raising=False)
    sent = []

    class Pipe:
        def send(self, msg):
            sent.append(msg)

    from engine.process.operations import Load, Request

    worker = _Worker(Pipe())

    def bug(rid, op):
        raise AttributeError("x" * LONG)  # a bug quoting 500 KB

    monkeypatch.setattr(worker, "backend", bug)
    worker.handle(Request(1, Load("m")))
    (msg,) = sent
    message = msg["record"].message
    assert message.startswith("internal error: AttributeError: ")
    assert len(message) < 500 and "LOGITSCOPE_DEBUG" in message
    assert "Traceback" not in capsys.readouterr().err  # was printed, with the 500 KB


# -- a model folder's tokenizer files, read without MLX (the window, `inspect --what tokens`) -----
def _folder(tmp_path, tokenizer: str, config: str | None = None) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(tokenizer)
    if config is not None:
        (folder / "tokenizer_config.json").write_text(config)
    return folder


def test_a_damaged_tokenizer_json_is_one_short_model_error(tmp_path):
    from engine.models.light_tokenizer import LightTokenizer

    bpe = {"type": "BPE", "vocab": {"a": 0}, "merges": ["q" * LONG + " a"]}
    folder = _folder(tmp_path, json.dumps({"model": bpe}))
    with pytest.raises(ModelError, match="model/tokenizer.json cannot be used") as info:
        LightTokenizer(folder)  # was the library's Exception, quoting the 500 KB token
    assert isinstance(info.value, ValueError) and len(str(info.value)) < SHORT_MESSAGE


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ("[1]", "tokenizer_config.json is not a JSON object"),
        ("{not json", "tokenizer_config.json is not JSON text"),
        ('{"chat_template": [1]}', "chat_template is not a template"),
    ],
)
def test_a_damaged_tokenizer_config_is_named(tmp_path, tiny_model_dir, config, match):
    from engine.models.light_tokenizer import LightTokenizer

    folder = _folder(tmp_path, (tiny_model_dir / "tokenizer.json").read_text(), config)
    with pytest.raises(ModelError, match=match):
        LightTokenizer(folder)  # was an AttributeError, KeyError or TypeError


def test_special_tokens_of_odd_types_are_left_out(tmp_path, tiny_model_dir):
    from engine.models.light_tokenizer import LightTokenizer

    config = '{"bos_token": {"no": "content"}, "eos_token": 7, "unk_token": "<u>"}'
    folder = _folder(tmp_path, (tiny_model_dir / "tokenizer.json").read_text(), config)
    assert LightTokenizer(folder).special_tokens_map == {"unk_token": "<u>"}
