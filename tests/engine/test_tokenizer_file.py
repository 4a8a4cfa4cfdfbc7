"""A tokenizer kept on disk by one engine is what the next engine reads instead of
building it again: it encodes, decodes, applies the chat template and streams text as
the one mlx-lm builds. A damaged or foreign copy is deleted and the tokenizer built; a
changed tokenizer file or another eos list is another copy; at most KEEP are kept."""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
from mlx_lm.utils import load_tokenizer

from engine.backends.mlx import loader, tokenizer_file

TEXT = "Hello, wörld! 12 + 30 = 42\n\tdone"
MESSAGES = [{"role": "user", "content": "Hi there"}]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A runtime folder of the test's own; no tokenizer kept in this process."""
    monkeypatch.setenv("LOGITSCOPE_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setattr(loader, "_TOKENIZERS", {})
    return tmp_path


def _model(src, tmp_path, name="m"):
    folder = tmp_path / name
    shutil.copytree(src, folder)
    return folder


def _tokenizer(folder):
    loader._TOKENIZERS.clear()  # as a new engine process: only the disk copy is shared
    config = json.loads((folder / "config.json").read_text())
    return loader._tokenizer(folder, config)


def _copies():
    return sorted(tokenizer_file.folder().glob("*.pickle"))


def _same(kept, built):
    assert type(kept) is type(built) and type(kept._tokenizer) is type(built._tokenizer)
    ids = built.encode(TEXT)
    assert kept.encode(TEXT) == ids and kept.decode(ids) == built.decode(ids) == TEXT
    assert kept.eos_token_ids == built.eos_token_ids and kept.vocab == built.vocab
    if built.has_chat_template:
        chat = kept.apply_chat_template(MESSAGES, add_generation_prompt=True)
        assert chat == built.apply_chat_template(MESSAGES, add_generation_prompt=True)
    assert type(kept.detokenizer) is type(built.detokenizer)
    streamed = []
    for tok in (kept, built):
        d = tok.detokenizer
        d.reset()
        for i in ids:
            d.add_token(i)
        d.finalize()
        streamed.append(d.text)
    assert streamed[0] == streamed[1]


def test_the_next_engine_reads_the_kept_tokenizer(fresh, tiny_model_dir):
    folder = _model(tiny_model_dir, fresh)
    first = _tokenizer(folder)
    assert len(_copies()) == 1  # kept by the first engine
    # mark the kept copy: the next engine must answer with it, not build its own
    (path,) = _copies()
    marked = pickle.loads(path.read_bytes())
    marked.marked_by_the_test = True
    path.write_bytes(pickle.dumps(marked))
    second = _tokenizer(folder)
    assert second is not first and getattr(second, "marked_by_the_test", False)
    _same(second, load_tokenizer(folder))


@pytest.mark.real_model
def test_the_default_models_kept_tokenizer_is_the_built_one(fresh, default_model_path):
    folder = _model(default_model_path, fresh, "smollm")
    _tokenizer(folder)
    kept = _tokenizer(folder)
    assert len(_copies()) == 1
    eos = json.loads((folder / "config.json").read_text()).get("eos_token_id")
    _same(kept, load_tokenizer(folder, None, eos_token_ids=eos))


@pytest.mark.parametrize("damage", [b"", b"\x80\x05 not a pickle", pickle.dumps({"a": 1})])
def test_a_damaged_or_foreign_copy_is_deleted_and_the_tokenizer_built(
    fresh, tiny_model_dir, damage
):
    folder = _model(tiny_model_dir, fresh)
    _tokenizer(folder)
    (path,) = _copies()
    path.write_bytes(damage)
    tok = _tokenizer(folder)
    _same(tok, load_tokenizer(folder))
    assert _copies() == [path] and path.read_bytes() != damage  # built, kept again


def test_a_changed_file_or_other_eos_ids_is_another_copy(fresh, tiny_model_dir):
    folder = _model(tiny_model_dir, fresh)
    _tokenizer(folder)
    config = json.loads((folder / "config.json").read_text())
    loader._TOKENIZERS.clear()
    loader._tokenizer(folder, {**config, "eos_token_id": [0, 1]})
    assert len(_copies()) == 2
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["added_tokens"][0]["content"] = "<|other|>"  # the file rewritten
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    tok = _tokenizer(folder)
    assert len(_copies()) == 3 and "<|other|>" in tok.vocab


def test_at_most_keep_copies_are_kept(fresh, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(tokenizer_file, "KEEP", 2)
    for i in range(4):
        _tokenizer(_model(tiny_model_dir, fresh, f"m{i}"))
    assert len(_copies()) == 2


def test_a_tokenizer_too_large_is_not_kept(fresh, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(tokenizer_file, "MAX_BYTES", 10)
    _tokenizer(_model(tiny_model_dir, fresh))
    assert _copies() == [] and not list(tokenizer_file.folder().glob("*.partial.*"))


def _vocab(folder) -> int:
    return json.loads((folder / "config.json").read_text())["vocab_size"]


def test_the_kept_copy_holds_the_byte_table(fresh, tiny_model_dir, monkeypatch):
    from engine.models import token_bytes

    folder = _model(tiny_model_dir, fresh)
    _tokenizer(folder)
    built = load_tokenizer(folder)
    want = token_bytes.bytes_table(token_bytes.vocabulary_strings(built, _vocab(folder)))
    assert len(want) == _vocab(folder) and b"!" in want and b"<|im_end|>" in want

    def never(_strings):
        raise AssertionError("the next engine built the byte table again")

    monkeypatch.setattr(token_bytes, "bytes_table", never)
    kept = _tokenizer(folder)
    assert token_bytes.kept_table(kept, _vocab(folder)) == want


def test_a_copy_kept_without_the_table_is_written_again_with_it(fresh, tiny_model_dir):
    from engine.models import token_bytes

    folder = _model(tiny_model_dir, fresh)
    _tokenizer(folder)
    (path,) = _copies()
    old = pickle.loads(path.read_bytes())
    del old._logitscope_bytes  # as kept before the copies held their tables
    path.write_bytes(pickle.dumps(old))
    assert not token_bytes.has_kept_table(pickle.loads(path.read_bytes()), _vocab(folder))
    _tokenizer(folder)
    assert token_bytes.has_kept_table(pickle.loads(path.read_bytes()), _vocab(folder))
