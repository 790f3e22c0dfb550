#!/usr/bin/env bash
# The test suite beside two busy processes, as on a loaded machine: proves the tests wait for
# events rather than for moments. Two `node -e 'for(;;){}'` hogs run while `npx vitest run`
# does (extra arguments go to vitest, e.g. a file list); they are stopped however the run ends.
# Exits with vitest's status and prints how long the run took.
#
#   scripts/test-under-load.sh            # the whole suite
#   HOGS=4 scripts/test-under-load.sh tests/reconnect.test.ts
set -u
cd "$(dirname "$0")/.."

hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

for _ in $(seq "${HOGS:-2}"); do
  node -e 'for (;;) {}' &
  hogs+=("$!")
done
echo "test-under-load: ${#hogs[@]} CPU hogs running (pids ${hogs[*]}) on $(nproc) cores"

started=$(date +%s)
npx vitest run "$@"
status=$?
elapsed=$(($(date +%s) - started))
stop_hogs
echo "test-under-load: vitest exited with ${status} after $((elapsed / 60)) min $((elapsed % 60)) s beside ${HOGS:-2} CPU hogs"
exit "$status"
