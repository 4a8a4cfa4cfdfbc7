"""Settings ▸ Cost: the electricity price, the machine's watts (for an estimate where
no energy counter can be read) and the editable table of hosted-API prices.

A view over engine/cost/costs.py: it reads and writes the same JSON files as the command
line and the engine process (which reads them at every run's start).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from engine.cost import costs
from engine.errors import LogitscopeError
from engine.machine.power_table import cpu_name, typical_watts

COLUMNS = ("provider", "model", "input / 1M tokens", "output / 1M tokens", "currency")
COLUMNS += ("source", "date", "example")


class CostDialog(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Cost settings")
        s = costs.load_settings()
        self.price = QDoubleSpinBox(decimals=4, maximum=costs.MAX_PRICE_PER_KWH, singleStep=0.01)
        self.price.setValue(s.price_per_kwh)
        self.currency = QLineEdit(s.currency)
        self.currency.setMaxLength(8)
        self.watts = QDoubleSpinBox(decimals=1, maximum=costs.MAX_WATTS, singleStep=1.0)
        self.watts.setSpecialValueText("the table's figure")
        self.watts.setValue(s.watts or 0.0)
        watts, source = typical_watts("CPU", cpu_name())
        hint = QLabel(
            f"Without a counter or your watts, this CPU is estimated at {watts:g} W: {source}."
        )
        hint.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Electricity price per kWh", self.price)
        form.addRow("Currency", self.currency)
        form.addRow("Your machine draws (W)", self.watts)
        form.addRow(hint)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setToolTip(
            "What the same tokens cost on hosted APIs: shipped rows are "
            "examples to check; edit them or add your own"
        )
        for p in costs.load_prices():
            self._add_row(p)
        add, remove, restore = (QPushButton(t) for t in ("Add row", "Remove row", "Examples"))
        add.clicked.connect(lambda: self._add_row(costs.ApiPrice("", "", 0.0, 0.0, example=False)))
        remove.clicked.connect(lambda: self.table.removeRow(self.table.currentRow()))
        restore.clicked.connect(self._on_examples)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.error = QLabel()
        self.error.setStyleSheet("color: #b91c1c")
        row = QHBoxLayout()
        for b in (add, remove, restore):
            row.addWidget(b)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        self.damage = damage_label()
        layout.addWidget(self.damage)
        layout.addLayout(form)
        layout.addWidget(QLabel("Hosted API prices (per million tokens)"))
        layout.addWidget(self.table, 1)
        layout.addLayout(row)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(900, 480)

    def _add_row(self, p: costs.ApiPrice) -> None:
        r = self.table.rowCount()
        self.table.insertRow(r)
        values = (p.provider, p.model, f"{p.input_per_mtok:g}", f"{p.output_per_mtok:g}")
        for c, v in enumerate((*values, p.currency, p.source, p.date)):
            self.table.setItem(r, c, QTableWidgetItem(v))
        check = QTableWidgetItem("example: check")
        check.setFlags(check.flags() | Qt.ItemIsUserCheckable)
        check.setCheckState(Qt.Checked if p.example else Qt.Unchecked)
        self.table.setItem(r, len(COLUMNS) - 1, check)

    def _on_examples(self) -> None:
        self.table.setRowCount(0)
        for p in costs.EXAMPLE_PRICES:
            self._add_row(p)

    def prices(self) -> list[costs.ApiPrice] | None:
        """The table's rows checked (engine/cost/costs.py); None when one does not fit."""
        out = []
        for r in range(self.table.rowCount()):
            cell = [
                (self.table.item(r, c).text() if self.table.item(r, c) else "")
                for c in range(len(COLUMNS) - 1)
            ]
            d = dict(
                zip(
                    (
                        "provider",
                        "model",
                        "input_per_mtok",
                        "output_per_mtok",
                        "currency",
                        "source",
                        "date",
                    ),
                    cell,
                    strict=True,
                )
            )
            d["example"] = self.table.item(r, len(COLUMNS) - 1).checkState() == Qt.Checked
            try:
                out.append(costs.price_row(d))
            except ValueError as e:
                self.error.setText(f"Row {r + 1}: a model name and prices of at least 0")
                self.error.setToolTip(str(e))  # which field, and why
                return None
        return out

    def accept(self) -> None:
        """Save both files, unless a row does not fit (then say which and stay open)."""
        prices = self.prices()
        if prices is None:
            return
        try:
            settings = costs.CostSettings(
                self.price.value(), self.currency.text().strip(), self.watts.value() or None
            )
            costs.save_settings(settings)
            costs.save_prices(prices)
        except (ValueError, OSError, LogitscopeError) as e:
            self.error.setText(str(e))
            return
        super().accept()


def damage_label() -> QLabel:
    """What is wrong with the cost files, in words, and what saving will do (hidden when
    both are sound): a damaged file is moved aside, never overwritten."""
    found = [d for d in (costs.damage(costs.COST_FILE), costs.damage(costs.PRICES_FILE)) if d]
    text = "\n".join(f"{d[0].upper()}{d[1:]}." for d in found)
    label = QLabel(text + "\nOK keeps the damaged file beside the new one, as <name>.damaged.")
    label.setWordWrap(True)
    label.setTextFormat(Qt.PlainText)
    label.setStyleSheet("color: #b45309")
    label.setVisible(bool(found))
    return label


def add_cost_action(menu) -> QAction:
    """Add 'Cost settings…' to `menu`; it opens the dialog over the menu's window."""
    action = QAction("C&ost settings…", menu)
    action.setStatusTip("Electricity price, your machine's watts and hosted-API prices")
    action.triggered.connect(lambda: CostDialog(menu.window()).exec())
    menu.addAction(action)
    return action
