#!/usr/bin/env bash
# Start the built Linux app with no terminal attached (setsid, stdin from /dev/null,
# output to a log) on a virtual display, and let it load the default model and
# generate. Prints its result and details (compute path, greedy token ids, speeds);
# exits 0 when the app's --self-test passed.
#   packaging/self_test_linux.sh [PATH/TO/Logitscope]   (default dist/Logitscope/Logitscope)
set -uo pipefail
cd "$(dirname "$0")/.."
app=${1:-dist/Logitscope/Logitscope}
[ -x "$app" ] || { echo "no $app: run packaging/build_linux.sh first"; exit 2; }
log=$(mktemp)
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
setsid "$app" --self-test </dev/null >"$log" 2>&1 &
pid=$!
wait $pid
rc=$?
grep -v propagateSizeHints "$log"
rm -f "$log"
exit $rc
