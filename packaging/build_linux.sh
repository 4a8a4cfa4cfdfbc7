#!/usr/bin/env bash
# Build the Linux app: dist/Logitscope/ (the executable Logitscope and everything it
# needs, OpenBLAS and MLX's vendored libraries included, plus install.sh, the desktop
# entry's template, the icon and the MIME types) and the archive
# dist/Logitscope-VERSION-linux-ARCH.tar.gz that installs by unpacking.
#   packaging/build_linux.sh [--no-archive]
# LOGITSCOPE_BUILD_PYTHON=/path/to/python builds with that interpreter (PyInstaller
# installed) instead of setting up the project's .venv; LOGITSCOPE_DIST_DIR (default
# dist) and LOGITSCOPE_WORK_DIR (default build/pyinstaller) say where the build goes.
set -euo pipefail
cd "$(dirname "$0")/.."
archive=1
[ "${1:-}" = --no-archive ] && archive=0
if [ -n "${LOGITSCOPE_BUILD_PYTHON:-}" ]; then
    py=$LOGITSCOPE_BUILD_PYTHON
else
    python3 dev.py setup >/dev/null
    py=.venv/bin/python
fi
dist=${LOGITSCOPE_DIST_DIR:-dist}
work=${LOGITSCOPE_WORK_DIR:-build/pyinstaller}
[ -f resources/logitscope.png ] || "$py" packaging/make_icon.py resources/logitscope.png
"$py" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$dist" --workpath "$work" packaging/logitscope.spec
app=$dist/Logitscope
# What engine/backends/mlx/fast_blas.py loads before MLX must be where it looks.
if [ "$(uname -m)" = x86_64 ]; then
    ls "$app"/_internal/ngsolve_openblas/libopenblas*.so* >/dev/null
    ls "$app"/_internal/mlx_cpu.libs/libgfortran-*.so* >/dev/null
fi
cp resources/logitscope.png "$app/logitscope.png"
cp packaging/linux/logitscope.desktop.in packaging/linux/logitscope-mime.xml "$app/"
install -m 755 packaging/linux/install.sh "$app/install.sh"
echo "Built $app ($(du -sh "$app" | cut -f1))"
if [ "$archive" = 1 ]; then
    version=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
    tarball=$dist/Logitscope-$version-linux-$(uname -m).tar.gz
    tar -C "$dist" -czf "$tarball.tmp" Logitscope && mv "$tarball.tmp" "$tarball"
    echo "Archive $tarball ($(du -sh "$tarball" | cut -f1)): unpack it where the app should"
    echo "stay, then run Logitscope/install.sh for the menu entry and file types."
fi
