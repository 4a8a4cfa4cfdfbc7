"""The playground's session as a Qt-free model: the conversation tree and the
state every view shows (see session.py). Nothing here imports Qt."""

from app.session.batches import ABTest
from app.session.conversation import Answer, Conversation, Turn
from app.session.session import Session

__all__ = ["ABTest", "Answer", "Conversation", "Session", "Turn"]
