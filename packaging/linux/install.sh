#!/bin/sh
# Add Logitscope to this user's menu: the desktop entry (pointing at the folder this
# script is in, so unpack the archive where it should stay first), the icon and the
# file types it opens (.gguf, session exports), all under ~/.local/share.
#   ./install.sh              install (again after moving the folder)
#   ./install.sh --uninstall  remove what install.sh added (the folder stays)
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
data=${XDG_DATA_HOME:-$HOME/.local/share}
apps=$data/applications
icons=$data/icons/hicolor/512x512/apps
mime=$data/mime

refresh() {  # the menus and file managers read these caches; missing tools are fine
    if command -v update-mime-database >/dev/null 2>&1; then update-mime-database "$mime"; fi
    if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database "$apps"; fi
    if command -v gtk-update-icon-cache >/dev/null 2>&1; then
        gtk-update-icon-cache -q -t "$data/icons/hicolor" 2>/dev/null || true
    fi
}

if [ "${1:-}" = --uninstall ]; then
    rm -f "$apps/logitscope.desktop" "$icons/logitscope.png" "$mime/packages/logitscope.xml"
    refresh
    echo "Removed Logitscope's menu entry, icon and file types (the app folder $here stays)."
    exit 0
fi
[ -x "$here/Logitscope" ] || { echo "install.sh: no Logitscope executable in $here" >&2; exit 1; }
case $here in  # the path goes into a quoted Exec= line and a sed replacement
    *[\"\`\$\\\|\&%]*)
        echo "install.sh: move the folder to a path without \" \` \$ \\ | & or % first" >&2
        exit 1 ;;
esac
mkdir -p "$apps" "$icons" "$mime/packages"
sed "s|@APPDIR@|$here|g" "$here/logitscope.desktop.in" > "$apps/logitscope.desktop.tmp"
mv "$apps/logitscope.desktop.tmp" "$apps/logitscope.desktop"
cp "$here/logitscope.png" "$icons/logitscope.png.tmp" && mv "$icons/logitscope.png.tmp" "$icons/logitscope.png"
cp "$here/logitscope-mime.xml" "$mime/packages/logitscope.xml.tmp"
mv "$mime/packages/logitscope.xml.tmp" "$mime/packages/logitscope.xml"
refresh
echo "Installed $apps/logitscope.desktop (runs $here/Logitscope)."
