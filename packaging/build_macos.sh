#!/usr/bin/env bash
# Build dist/Logitscope.app for Apple Silicon (run on an arm64 Mac).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(uname -m)" = arm64 ] || { echo "Logitscope.app is built on an Apple Silicon Mac"; exit 1; }
python3 dev.py setup >/dev/null
[ -f resources/logitscope.png ] || .venv/bin/python packaging/make_icon.py resources/logitscope.png
iconset=build/logitscope.iconset
rm -rf "$iconset" && mkdir -p "$iconset"
for s in 16 32 128 256 512; do
  sips -z $s $s resources/logitscope.png --out "$iconset/icon_${s}x${s}.png" >/dev/null
  sips -z $((s * 2)) $((s * 2)) resources/logitscope.png --out "$iconset/icon_${s}x${s}@2x.png" >/dev/null
done
iconutil -c icns "$iconset" -o resources/logitscope.icns
.venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/logitscope.spec
echo "Built dist/Logitscope.app ($(du -sh dist/Logitscope.app | cut -f1))"
