#!/usr/bin/env bash
# Build the Linux app: dist/Logitscope/ (executable Logitscope + everything it needs)
# and dist/Logitscope/logitscope.desktop. Run from anywhere; uses the project's .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 dev.py setup >/dev/null
.venv/bin/python -m pip install --quiet "pyinstaller>=6.10,<7"
.venv/bin/python packaging/make_icon.py resources/logitscope.png
.venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/logitscope.spec
cp resources/logitscope.png dist/Logitscope/logitscope.png
cat > dist/Logitscope/logitscope.desktop <<DESKTOP
[Desktop Entry]
Type=Application
Name=Logitscope
Comment=See what a local LLM was choosing between, token by token
Exec=$(pwd)/dist/Logitscope/Logitscope
Icon=$(pwd)/dist/Logitscope/logitscope.png
Terminal=false
Categories=Development;Education;
DESKTOP
chmod +x dist/Logitscope/logitscope.desktop
echo "Built dist/Logitscope ($(du -sh dist/Logitscope | cut -f1)); install the menu entry with:"
echo "  cp dist/Logitscope/logitscope.desktop ~/.local/share/applications/"
