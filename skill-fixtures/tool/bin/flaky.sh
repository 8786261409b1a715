#!/bin/sh
# Dies from SIGKILL on its first run in a workspace, succeeds afterwards. With --speak-first it
# writes to stdout before dying, which makes a retry unsafe.
marker="$RUNX_CWD/flaky.marker"
if [ ! -f "$marker" ]; then
  : > "$marker"
  if [ "$1" = "--speak-first" ]; then echo "partial"; fi
  kill -9 $$
fi
printf '{"ok":true}\n'
