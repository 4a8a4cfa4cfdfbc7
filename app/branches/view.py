"""BranchesView: the runs of the turn on screen as a tree of branch points.

Each run that continued another (a chosen token, or one of a Sample N) hangs under
its parent's branch point ("at step K, after '…'"), with the token it took there
and that token's probability, a preview of what followed, its length, the joint
log-probability from the branch point and the mean p of the model's own choices
(engine/sessions/branch_tree.py). Clicking a run shows it (every chart follows);
two selected runs open in Compare (statistics and first divergence); a run can be
renamed or deleted (to History's bin). Draws from the session; changes go through
SessionSignals.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMenu,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.sessions.branch_tree import BranchNode, build_tree, summarise

COLUMNS = ("Branch", "p", "tok", "log p", "mean p")
EMPTY = (
    "No branches yet. Right-click a token of the answer (or click a bar of the "
    "distribution) to continue from there with another token, or to sample futures."
)


def nodes_of(answers) -> list[BranchNode]:
    """BranchNodes of a turn's answers (keyed by the Answer itself)."""
    return [
        BranchNode(
            key=a,
            tokens=a.state.tokens if a.state is not None else [],
            parent=a.parent,
            step=a.branch_step,
            kind=a.branch_kind,
            name=a.name,
        )
        for a in answers
    ]


class BranchesView(QWidget):
    """The tree (see the module docstring)."""

    compare_requested = Signal(list)  # [RunState, RunState]
    meta_changed = Signal(str, dict)  # (run id, {"name": …} or {"deleted": True})

    def __init__(self, model, parent=None):
        super().__init__(parent)
        self.model = model
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setSelectionMode(QTreeWidget.ExtendedSelection)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.setAccessibleName("Branches of this turn")
        self.tree.setIndentation(12)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        for i in range(1, len(COLUMNS)):
            header.setSectionResizeMode(i, QHeaderView.ResizeToContents)
        self.empty = QLabel(EMPTY)
        self.empty.setWordWrap(True)
        self.details = QLabel()  # the run on screen: whole preview and statistics
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.PlainText)
        self.details.setAccessibleName("The branch on screen")
        self.compare_button = QPushButton("Compare selected")
        self.compare_button.setToolTip("Open the two selected runs in Compare (Ctrl+click two)")
        self.rename_button = QPushButton("Rename…")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Move the selected run to History's bin")
        buttons = QHBoxLayout()
        for b in (self.compare_button, self.rename_button, self.delete_button):
            buttons.addWidget(b)
            b.setEnabled(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.empty)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.details)
        layout.addLayout(buttons)
        self.tree.itemClicked.connect(self._clicked)
        self.tree.itemSelectionChanged.connect(self._selection)
        self.tree.customContextMenuRequested.connect(self._menu)
        self.compare_button.clicked.connect(self.compare_selected)
        self.rename_button.clicked.connect(self._rename_selected)
        self.delete_button.clicked.connect(self._delete_selected)
        model.conversation_changed.connect(self.refresh)
        model.run_finished.connect(lambda _r: self.refresh())
        self.refresh()

    # -- drawing ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Rebuild the tree from the turn on screen (keeps the scroll, selects the shown)."""
        session = self.model.session
        home = session.home()
        answers = home.answers if home is not None else []
        self.tree.clear()
        self.items: dict = {}
        self.summaries: dict = {}  # answer -> (node, summary)
        self.points: list[QTreeWidgetItem] = []  # the branch points' rows
        roots = build_tree(nodes_of(answers))
        for root in roots:
            self.tree.addTopLevelItem(self._item(root))
        for point in self.points:  # in the tree now: a point's words take the whole row
            point.setFirstColumnSpanned(True)  # ("at step 15" cut to "at step 1…" in one column)
        self.tree.expandAll()
        shown = session.shown_answer()
        if shown in self.items:
            self.tree.setCurrentItem(self.items[shown])
        branched = len(answers) > 1
        self.empty.setVisible(not branched)
        self.details.setVisible(branched and shown in self.summaries)
        if shown in self.summaries:
            self.details.setText(details_text(*self.summaries[shown]))
        self._selection()

    def _item(self, node: BranchNode) -> QTreeWidgetItem:
        s = summarise(node)
        answer = node.key
        self.summaries[answer] = (node, s)
        if node.step is None:
            label = s.preview
        else:  # ✎: a token chosen by the person
            label = f"{'✎ ' if s.forced else ''}{s.token!r} → {s.preview[len(s.token.strip()) :]}"
        if node.name:
            label = f"{node.name}: {label}"
        running = answer.state is not None and answer.state.done is None
        values = (
            label + (" (running…)" if running else ""),
            _percent(s.prob),
            str(s.length),
            f"{s.joint_logprob:.1f}" if s.joint_logprob is not None else "",
            f"{s.mean_p:.2f}" if s.mean_p is not None else "",
        )
        item = QTreeWidgetItem(list(values))
        item.setData(0, Qt.UserRole, answer)
        tip = "chosen by you" if s.forced else ("sampled" if node.step is not None else "")
        item.setToolTip(
            0,
            f"{s.preview}\n{s.length} tokens from the branch point"
            + (f" · {tip}" if tip else "")
            + (f"\nrun {answer.state.run_id}" if answer.state and answer.state.run_id else ""),
        )
        self.items[answer] = item
        for step, children in node.points:
            before = " ".join(text_before(node.tokens, step).split())[-30:]
            where = f"after “…{before}”" if before else "from the start"  # step 0: no text
            point = QTreeWidgetItem([f"at step {step}, {where}"])
            point.setFlags(Qt.ItemIsEnabled)  # a place, not a run: not selectable
            point.setToolTip(0, f"{len(children)} branch(es) continue from step {step}")
            self.points.append(point)
            for child in children:
                point.addChild(self._item(child))
            item.addChild(point)
        return item

    # -- actions ------------------------------------------------------------------------
    def selected_answers(self) -> list:
        return [
            i.data(0, Qt.UserRole)
            for i in self.tree.selectedItems()
            if i.data(0, Qt.UserRole) is not None
        ]

    def _selection(self) -> None:
        chosen = self.selected_answers()
        done = [a for a in chosen if a.state is not None and a.state.tokens]
        self.compare_button.setEnabled(len(done) == 2)
        self.rename_button.setEnabled(len(chosen) == 1)
        self.delete_button.setEnabled(len(chosen) == 1 and self._deletable(chosen[0]))

    def _deletable(self, answer) -> bool:
        home = self.model.session.home_of(answer)
        return home is not None and len(home.answers) > 1

    def _clicked(self, item: QTreeWidgetItem) -> None:
        answer = item.data(0, Qt.UserRole)
        if answer is None or len(self.tree.selectedItems()) > 1:
            return
        if answer.state is not None and answer.state is not self.model.session.shown:
            self.model.show_answer(answer)

    def compare_selected(self) -> None:
        """Open the two selected runs in Compare."""
        chosen = [a for a in self.selected_answers() if a.state is not None and a.state.tokens]
        if len(chosen) == 2:
            self.compare_requested.emit([a.state for a in chosen])

    def rename(self, answer, name: str) -> None:
        """Name a run (shown in the tree; saved as its name in History)."""
        self.model.session.rename(answer, name)
        if answer.state is not None and answer.state.run_id:
            self.meta_changed.emit(answer.state.run_id, {"name": answer.name})
        self.refresh()

    def delete(self, answer) -> bool:
        """Take a run out of the tree; History keeps it in the bin."""
        run_id = answer.state.run_id if answer.state is not None else None
        if not self.model.delete_branch(answer):
            return False
        if run_id:
            self.meta_changed.emit(run_id, {"deleted": True})
        return True

    def _rename_selected(self) -> None:
        chosen = self.selected_answers()
        if len(chosen) != 1:
            return
        name, ok = QInputDialog.getText(self, "Rename run", "Name:", text=chosen[0].name)
        if ok:
            self.rename(chosen[0], name)

    def _delete_selected(self) -> None:
        chosen = self.selected_answers()
        if len(chosen) == 1:
            self.delete(chosen[0])

    def _menu(self, pos) -> None:
        item = self.tree.itemAt(pos)
        answer = item.data(0, Qt.UserRole) if item is not None else None
        menu = QMenu(self)
        if answer is not None:
            menu.addAction("Show", lambda: self.model.show_answer(answer))
            menu.addAction("Rename…", self._rename_selected)
            gone = menu.addAction("Delete (to History's bin)", lambda: self.delete(answer))
            gone.setEnabled(self._deletable(answer))
        cmp_ = menu.addAction("Compare selected", self.compare_selected)
        cmp_.setEnabled(self.compare_button.isEnabled())
        menu.exec(self.tree.viewport().mapToGlobal(pos))


def text_before(tokens, step: int) -> str:
    """The answer's text before `step`."""
    return "".join(t.text for t in tokens[:step])


def _percent(p: float | None) -> str:
    """A probability as a short percentage ("" when unknown)."""
    if p is None:
        return ""
    return f"{p:.0%}" if p >= 0.095 else f"{p:.1%}" if p >= 0.001 else f"{p:.0e}"


def details_text(node: BranchNode, s) -> str:
    """The run on screen, in words: where it branched, how, what followed."""
    stats = [f"{s.length} tokens"]
    if s.joint_logprob is not None:
        stats.append(
            f"log p {s.joint_logprob:.2f}" + (" from the branch point" if node.step else "")
        )
    if s.mean_p is not None:
        stats.append(f"mean p {s.mean_p:.2f}" + (" (the model's own choices)" if s.forced else ""))
    if node.step is None:
        head = "The original run"
    else:
        how = "chosen by you" if s.forced else "sampled"
        head = f"Branch at step {node.step}: {s.token!r} ({how}, p {_percent(s.prob)})"
    name = f"{node.name} · " if node.name else ""
    return f"{name}{head}\n“{s.preview}”\n{' · '.join(stats)}"
