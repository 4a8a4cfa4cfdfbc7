"""What is shown from elsewhere never becomes yours: the rule, and the two pieces it needs.

The rule, in the terms the guide uses (docs/guide/playground.md, "Yours and shown"):

- **Your conversation** is the one your own Runs made: its turns, its branches, the run
  you last looked at, the turn you were editing. The next Run always continues it, with
  your settings and your loaded model.
- **A run shown from elsewhere** (a run reopened from History, a read, a request the
  server answered while you followed it, a lane of Compare) is a *guest*: it is drawn in
  full (its text, every chart, its own conversation and branches) but read-only, under a
  line that says where it came from. Your conversation waits, untouched, behind it.
- **Run** while a guest is on screen puts your conversation back and starts its next
  turn there. **Back to your conversation** puts it back without running.
- The one exception is **Continue from here**, an explicit choice: the guest's
  conversation becomes yours (what you had before is still in History), and its model and
  settings are taken, which the window says.
- **A read is never a chat turn**: reopened, it is a guest; continued, it is a read.
- **The tour is a guest too**, at a larger scale: while it is open its lessons run in a
  workspace and a History session of their own ("Tour"); closing it puts back your
  workspace, settings, mode, prompt and model exactly as they were.

`Workspace` is what is put aside while a guest is on screen; `Guest` is the guest itself
(where it came from, and the workspace behind it). Both are plain data: the Session
(app/session/session.py) applies the rule; nothing here imports Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.session.conversation import Conversation, Turn
from app.session.run_state import RunState

# Where a guest came from: the word the line above the answer starts with.
FROM_HISTORY = "History"
FROM_SERVER = "Server"
FROM_COMPARE = "Compare"


@dataclass
class Workspace:
    """A person's own playground: what the next Run continues."""

    conversation: Conversation
    raw_turn: Turn | None  # the last raw-completion (or read) run and its branches
    shown: RunState  # the run that was on screen
    shown_turn: int | None  # its turn, if it had one
    editing_turn: int | None  # a turn that was put back in the prompt box


@dataclass
class SetAside:
    """Everything of the person's playground a guest workspace (the tour) puts aside:
    their workspace, what was on screen from elsewhere, and their History session."""

    own: Workspace
    viewing: object
    guest: Guest | None
    journal: object  # their Journal, left open: the tour writes to one of its own
    journal_title: str | None


@dataclass
class Guest:
    """A run shown from elsewhere, read-only, and the person's workspace behind it."""

    source: str  # FROM_HISTORY, FROM_SERVER, FROM_COMPARE
    line: str  # the line above the answer: where it came from, in words
    own: Workspace  # what Run or Back to your conversation puts back
    run: object = None  # the RunLog it was reopened from, when from History
