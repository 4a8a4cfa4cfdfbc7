"""Draw the app icon (a token-probability bar motif) to resources/logitscope.png.

python packaging/make_icon.py      (offscreen Qt; the build scripts run it)
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    from PySide6.QtCore import QRectF, Qt
    from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter

    QGuiApplication([])
    size = 512
    img = QImage(size, size, QImage.Format_ARGB32)
    img.fill(Qt.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing)
    p.setBrush(QColor("#1f2a44"))
    p.setPen(Qt.NoPen)
    p.drawRoundedRect(QRectF(16, 16, size - 32, size - 32), 96, 96)
    bars = ((0.92, "#63be7b"), (0.55, "#ffeb84"), (0.30, "#f8a46b"), (0.16, "#f8696b"))
    for i, (h, color) in enumerate(bars):
        p.setBrush(QColor(color))
        x = 96 + i * 84
        p.drawRoundedRect(QRectF(x, 416 - 300 * h, 60, 300 * h), 14, 14)
    p.end()
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "resources/logitscope.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(str(out))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
