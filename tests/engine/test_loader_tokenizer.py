"""The loader builds a model's tokenizer once per process while its files are unchanged
(the Lab loads the model again for each experiment)."""

from __future__ import annotations

import os
import shutil

import pytest

from engine.backends.mlx import loader
from engine.errors import ModelError


@pytest.fixture
def folder(tiny_model_dir, tmp_path):
    copy = tmp_path / "tiny"
    shutil.copytree(tiny_model_dir, copy)
    return copy


def test_a_second_load_reuses_the_tokenizer_until_its_files_change(folder):
    first = loader.load_model(folder)[0]
    second = loader.load_model(folder)[0]
    assert second.tokenizer is first.tokenizer and second.model is not first.model
    ids = first.tokenizer.encode("hello world")
    tok = folder / "tokenizer_config.json"
    stat = tok.stat()
    os.utime(tok, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = loader.load_model(folder)[0]
    assert third.tokenizer is not first.tokenizer
    assert third.tokenizer.encode("hello world") == ids


def test_a_folder_without_its_tokenizer_is_one_sentence(folder):
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer_config.json").unlink()
    with pytest.raises(ModelError, match="cannot load"):
        loader.load_model(folder)
