#!/bin/sh
# Reports whether it runs in the workspace root.
if [ "$(pwd -P)" = "$(cd "$RUNX_CWD" && pwd -P)" ]; then same=true; else same=false; fi
printf '{"in_workspace":%s}\n' "$same"
