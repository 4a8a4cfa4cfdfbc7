"""One settings store: every user of QSettings goes through app/core/settings_store.py."""

from __future__ import annotations

import re
from pathlib import Path

import app
from app.core import settings_store
from app.dialogs import file_dialogs
from app.shell import window_state
from app.widgets import model_picker
from engine.store.paths import data_dir

OPENS_OR_SUBCLASSES = r"QSettings\s*\(|\(QSettings\)"


def test_only_the_settings_store_opens_qsettings():
    root = Path(app.__file__).parent
    openers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(OPENS_OR_SUBCLASSES, p.read_text(encoding="utf-8"))
    )
    assert openers == ["core/settings_store.py"]


def test_every_user_reads_and_writes_the_same_file(tmp_path):
    settings_store.set_value("dialogs/last_folder", str(tmp_path))
    assert file_dialogs.default_folder() == str(tmp_path)
    before = model_picker.compute_preference()  # the suite's pinned path, given back below
    model_picker.set_compute_preference("memory")
    assert settings_store.value("model/prefer") == "memory"
    assert window_state.open_store().value("model/prefer") == "memory"
    window_state.remember_drop_oldest(True)
    assert window_state.drop_oldest() is True
    text = (data_dir() / settings_store.SETTINGS_FILE).read_text()
    assert "prefer=memory" in text and "drop_oldest=true" in text
    model_picker.set_compute_preference(before)
    window_state.remember_drop_oldest(False)
