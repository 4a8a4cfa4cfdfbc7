"""Damaged settings the window keeps (settings.ini, the remembered servers in it, the
cost files): the app starts and every cost view draws, the damage is shown in words
naming the file, and the file's bytes are kept (or moved aside to `<name>.damaged`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QMainWindow, QTableWidget

from app.core import servers, settings_store
from engine.cost import costs
from engine.store import settings_files

DEEP = "[" * 100_000
GOOD = {"base_url": "http://127.0.0.1:9/v1", "label": "mine", "models": ["m1"]}

# Runs `python -m app`'s main() and, instead of waiting for the person, prints the
# window's status bar and closes it as Quit does (saving settings.ini), then ends.
START = textwrap.dedent(
    """
    import os
    import sys
    from PySide6.QtWidgets import QApplication

    def exec_once(self=None):
        app = QApplication.instance()
        app.processEvents()
        win = next(w for w in app.topLevelWidgets() if type(w).__name__ == "PlaygroundWindow")
        print("STATUS:", win.statusBar().currentMessage(), flush=True)
        win.close()
        app.processEvents()
        sys.stderr.flush()
        os._exit(0)  # past Qt's teardown, which is not what is tested here

    if __name__ == "__main__":
        QApplication.exec = exec_once
        from app.main import main
        sys.exit(main(["logitscope-app"]))
    """
)


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """A data folder of its own, checked afresh, with nothing said yet."""
    monkeypatch.setenv("LOGITSCOPE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(settings_files, "_said", [])
    monkeypatch.setattr(settings_files, "_listeners", [])
    monkeypatch.setattr(settings_store, "_checked", set(), raising=False)
    return tmp_path


def _ini(list_value: str) -> bytes:
    return f"[General]\nprompt=hello\n\n[servers]\nlist={list_value}\n".encode()


def _start(tmp_path) -> subprocess.CompletedProcess:
    script = tmp_path.parent / f"{tmp_path.name}_start.py"
    script.write_text(START)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LOGITSCOPE_DATA_DIR": str(tmp_path)}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=root,
    )


# (settings.ini's bytes, the words said, where they are kept: the remembered servers'
# value inside the rewritten settings.ini, or the whole file moved aside)
STARTS = {
    "servers list of 5": (_ini("5"), "(not a JSON list); none are listed", "5"),
    "servers nested 100,000 deep": (
        _ini(DEEP),
        "(it is nested too deeply to read); none are listed",
        DEEP,
    ),
    "binary garbage": (
        bytes(range(256)) * 20,
        "is damaged (it is not text (not UTF-8 at byte 128))",
        "settings.ini.damaged",
    ),
    "cost files": (
        _ini("[]"),
        "The cost settings {data}/cost.json are damaged (it is nested too deeply to read)",
        "cost.json",
    ),
    "a 5 MB line": (
        b"[General]\nprompt=hi\n" + b"A" * 5_000_000 + b"\n",
        "is damaged (line 3 is 5,000,000 characters long); it was moved aside to "
        "settings.ini.damaged and Logitscope starts with fresh settings",
        "settings.ini.damaged",
    ),
}


@pytest.mark.parametrize("kind", STARTS)
@pytest.mark.slow
def test_the_app_starts_on_damaged_settings_and_says_so(fresh, kind):
    content, words, kept = STARTS[kind]
    (fresh / "settings.ini").write_bytes(content)
    words = words.format(data=fresh)
    if kind == "cost files":  # read by the engine at each run; said by the window at start
        (fresh / "cost.json").write_text(DEEP)
    p = _start(fresh)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    status = next(line for line in p.stdout.splitlines() if line.startswith("STATUS: "))
    assert words in status and str(fresh) in status, status
    assert f"logitscope: warning: the {status[len('STATUS: ') + 4 :]}" in p.stderr
    if kept == "cost.json":
        assert (fresh / kept).read_text() == DEEP
    elif kept.endswith(".damaged"):
        assert (fresh / kept).read_bytes() == content
    else:  # the window saved its settings at exit; the damaged value is still there
        assert settings_store.value("servers/list") == kept


DAMAGED_VALUES = (
    b'[General]\nprompt=a, b\nmodel=x, y\nsettings="' + DEEP.encode() + b'"\n'
    b"window\\geometry=5\n\n[view]\nprob_scale=1, 2\n"
)


@pytest.mark.slow
def test_the_app_starts_on_damaged_values_and_names_each(fresh):
    (fresh / "settings.ini").write_bytes(DAMAGED_VALUES)
    p = _start(fresh)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    status = next(line for line in p.stdout.splitlines() if line.startswith("STATUS: "))
    for key, why in [
        ("prompt", "a list where text belongs"),
        ("model", "a list where text belongs"),
        ("settings", "nested too deeply"),
        ("window/geometry", "not the bytes Qt saved"),
        ("view/prob_scale", "a list where text belongs"),
    ]:
        words = f"settings file {fresh / 'settings.ini'} holds a damaged value for {key} ({why})"
        assert f"logitscope: warning: the {words}; its default is used" in p.stderr, key
        assert words in status, key


def test_the_store_gives_only_the_kind_of_value_the_app_writes(fresh, capsys):
    path = fresh / "settings.ini"
    path.write_text(
        "[General]\nrecent=a, b\none=only\nsettings=5\nnul=a\\0b\n"
        "[windows]\ncompare=@ByteArray(xy)\nlab=text\n"
    )
    store = settings_store.store()
    assert store.value("recent", []) == ["a", "b"]  # a list where the default is a list
    assert store.value("one", []) == "only"  # Qt reads a one-item list as its text
    assert store.value("settings") == "5"  # text: its reader checks what it says
    assert store.value("windows/compare") == b"xy"
    assert store.value("recent") is None
    assert store.value("nul", "d") == "d"
    assert store.value("windows/lab") is None
    assert store.value("absent", "d") == "d"
    err = capsys.readouterr().err
    assert f"{path} holds a damaged value for recent (a list where text belongs)" in err
    assert "value for nul (it holds a NUL character)" in err
    assert "value for windows/lab (not the bytes Qt saved)" in err
    assert err.count("\n") == 3
    assert path.read_text().startswith("[General]\nrecent=a, b\n")


def test_qt_writes_what_the_check_accepts(fresh):
    """No false alarm: whatever the window stores, the check finds it sound."""
    settings_store.set_value("prompt", "Tab\there, a newline\nand é, 漢字, \x01\x7f, = ; [x]")
    settings_store.set_value("servers/list", json.dumps([GOOD]))
    settings_store.set_value("window/geometry", bytes(range(256)))
    path = fresh / settings_store.SETTINGS_FILE
    assert settings_store.ini_damage(path.read_text(encoding="utf-8")) is None
    assert settings_store.check(path) is None and path.exists()


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"[General]\nx=1\n\x00\x00\n", "line 3 holds control characters"),
        (b"[General]\nx=1\nno equals sign here\n", "line 3 is neither"),
        (b"\xff\xfe[General]\n", "not UTF-8 at byte 0"),
        (b"[General]\nprompt=" + b"a" * (9 << 20) + b"\n", "9.4 MB, more than a settings file"),
    ],
)
def test_a_damaged_settings_ini_is_moved_aside_before_qt_opens_it(fresh, capsys, content, why):
    path = fresh / settings_store.SETTINGS_FILE
    path.write_bytes(content)
    settings_store.set_value("theme", "dark")  # Qt would have rewritten the file here
    assert (fresh / "settings.ini.damaged").read_bytes() == content
    assert settings_store.value("theme") == "dark"
    err = capsys.readouterr().err
    assert f"the settings file {path} is damaged (" in err and why in err, err


@pytest.mark.parametrize(
    ("stored", "why", "left"),
    [
        ("5", "(not a JSON list); none are listed", []),
        (DEEP, "(it is nested too deeply to read); none are listed", []),
        ("[{nope", "(it is not valid JSON", []),
        ("x" * 2_000_000, "(2,000,000 characters long); none are listed", []),
        (json.dumps([GOOD, 5, {"base_url": 5, "models": []}]), "(2 entries of the wrong", [GOOD]),
        (
            json.dumps([{**GOOD, "label": 7, "models": ["m1", 3]}]),
            None,
            [{**GOOD, "label": "server"}],
        ),
    ],
)
def test_remembered_servers_are_checked_entry_by_entry(fresh, capsys, stored, why, left):
    settings_store.set_value("servers/list", stored)
    before = (fresh / "settings.ini").read_bytes()
    assert servers.load_servers() == left
    assert servers.server_models() == [
        (f"m1 · {s['label']} @ 127.0.0.1:9", "http://127.0.0.1:9/v1#m1") for s in left
    ]
    err = capsys.readouterr().err
    if why is None:
        assert err == ""
    else:
        assert f"the remembered servers (servers/list in {fresh / 'settings.ini'})" in err
        assert why in err and err.count("\n") == 1, err
    assert (fresh / "settings.ini").read_bytes() == before


def test_a_list_qt_reads_as_several_values_is_damage(fresh, capsys):
    (fresh / "settings.ini").write_text("[servers]\nlist=a, b\n")
    assert servers.load_servers() == []
    assert (
        "holds a damaged value for servers/list (a list where text belongs)"
        in capsys.readouterr().err
    )


def test_saving_a_server_keeps_the_damaged_list_first(fresh, capsys):
    settings_store.set_value("servers/list", DEEP)
    info = SimpleNamespace(
        base_url="http://127.0.0.1:9/v1", label="mine", models=[SimpleNamespace(id="m1")]
    )
    servers.save_server(info)
    assert servers.load_servers() == [GOOD]
    kept = fresh / servers.SERVERS_DAMAGED_FILE
    assert kept.read_text() == DEEP
    assert f"were kept in {kept}" in capsys.readouterr().err
    servers.save_server(info)  # a sound list: nothing more is set aside
    assert sorted(p.name for p in fresh.iterdir()) == [servers.SERVERS_DAMAGED_FILE, "settings.ini"]


def test_the_status_bar_says_damage_found_before_and_after(qtbot, fresh):
    from app.main import say_damaged_settings

    settings_files.report("the cost settings /x/cost.json are damaged (a); the defaults are used")
    win = QMainWindow()
    qtbot.addWidget(win)
    say_damaged_settings(win)
    assert win.statusBar().currentMessage() == (
        "The cost settings /x/cost.json are damaged (a); the defaults are used"
    )
    (fresh / costs.PRICES_FILE).write_bytes(b"\xff")
    worker = threading.Thread(target=costs.load_prices)  # found off the GUI thread
    worker.start()
    worker.join()
    said = (
        f" · The API price table {fresh / costs.PRICES_FILE} is damaged (it is not text "
        "(not UTF-8 at byte 0)); the examples are used"
    )
    qtbot.waitUntil(lambda: win.statusBar().currentMessage().endswith(said), timeout=5_000)
    assert win.statusBar().toolTip().count("\n") == 1


PRICE_DAMAGE = {
    "400 digits": '[{"model": "m", "input_per_mtok": ' + "9" * 400 + ', "output_per_mtok": 1}]',
    "1e308": '[{"model": "m", "input_per_mtok": 1e308, "output_per_mtok": 1}]',
    "NaN": '[{"model": "m", "input_per_mtok": NaN, "output_per_mtok": 1}]',
    "deep nesting": DEEP,
    "wrong types": '{"model": 5}',
}


@pytest.mark.parametrize("kind", PRICE_DAMAGE)
def test_cost_views_draw_on_a_damaged_price_table(qtbot, fresh, capsys, kind):
    import pyqtgraph as pg

    from app.charts.explain import EXPLAIN
    from app.compare.cost import COST_ROWS, LaneCosts
    from app.inside.economy_cost import draw_cost
    from tests.engine.test_cost_reports import _done

    path = fresh / costs.PRICES_FILE
    path.write_text(PRICE_DAMAGE[kind])
    (fresh / costs.COST_FILE).write_text('{"price_per_kwh": ' + "9" * 400 + "}")
    done = _done(36.0, "estimated from 12 W", 0.01, "EUR")
    text = EXPLAIN["throughput"](SimpleNamespace(done=done, n=1, elapsed=[0.0]))
    assert "\n\nCost. Energy 36 J" in text
    # the examples stand in for an unreadable table; a table of bad rows is empty
    hosted = "gpt-4o-mini" if kind in ("deep nesting", "wrong types") else "no price table"
    table = QTableWidget(len(COST_ROWS), 1)
    qtbot.addWidget(table)
    lane = SimpleNamespace(index=0, state=SimpleNamespace(done=done))
    LaneCosts().fill(table, [lane], 0)
    assert hosted in table.item(2, 0).text()
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    bars, local = (
        pg.BarGraphItem(x=[0], height=[0], width=0.5),
        pg.BarGraphItem(x=[0], height=[0], width=0.5),
    )
    draw_cost(widget.getPlotItem(), bars, local, {"English": {"tokens": 10}}, 100.0)
    assert len(bars.opts["height"]) == 1
    err = capsys.readouterr().err
    assert f"the API price table {path} is damaged" in err
    assert f"the cost settings {fresh / costs.COST_FILE} are damaged" in err
    assert path.read_text() == PRICE_DAMAGE[kind]


def test_the_cost_dialog_says_the_damage_and_moves_the_file_aside(qtbot, fresh):
    from app.dialogs.cost_dialog import CostDialog

    prices, settings = fresh / costs.PRICES_FILE, fresh / costs.COST_FILE
    prices.write_text(PRICE_DAMAGE["1e308"])
    settings.write_bytes(b"\xff" * 10)
    dialog = CostDialog()
    qtbot.addWidget(dialog)
    assert not dialog.damage.isHidden()
    text = dialog.damage.text()
    assert f"The API price table {prices} is damaged (row 1: the input price (1e+308)" in text
    assert f"The cost settings {settings} are damaged (it is not text" in text
    assert "as <name>.damaged" in text
    assert dialog.table.rowCount() == 0  # the one row did not fit
    dialog._add_row(costs.ApiPrice("Me", "mine", 1.0, 2.0, example=False))
    dialog.accept()
    assert dialog.result() == 1, dialog.error.text()
    assert (fresh / f"{costs.PRICES_FILE}.damaged").read_text() == PRICE_DAMAGE["1e308"]
    assert (fresh / f"{costs.COST_FILE}.damaged").read_bytes() == b"\xff" * 10
    assert [p.model for p in costs.load_prices()] == ["mine"]
    sound = CostDialog()
    qtbot.addWidget(sound)
    assert sound.damage.isHidden()


def test_the_cost_dialog_says_which_field_of_a_row_does_not_fit(qtbot, fresh):
    from app.dialogs.cost_dialog import CostDialog

    dialog = CostDialog()
    qtbot.addWidget(dialog)
    dialog.table.item(0, 2).setText("1e400")
    dialog.accept()
    assert dialog.error.text() == "Row 1: a model name and prices of at least 0"
    assert dialog.error.toolTip() == "the input price ('1e400') is not a number from 0 to 1,000,000"
    assert not (fresh / costs.PRICES_FILE).exists()


@pytest.mark.parametrize(
    "stored",
    ['{"temperature": NaN}', '{"max_tokens": 1e400}', '{"top_k": -5}', '{"seed": 1e30}'],
)
@pytest.mark.slow
def test_remembered_sampling_settings_out_of_range_are_damage(fresh, stored):
    """Settings that parse but are out of range (an OverflowError in the spin box before)
    are said, and the app starts with the defaults."""
    value = stored.replace('"', '\\"')
    (fresh / "settings.ini").write_bytes(f'[General]\nsettings="{value}"\n'.encode())
    p = _start(fresh)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    words = "holds a damaged value for settings (not the sampling settings the app saves)"
    assert words in p.stderr
