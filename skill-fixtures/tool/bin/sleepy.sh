#!/bin/sh
# Forks a grandchild that sleeps, records its pid, then sleeps itself.
sleep 30 &
echo $! > "$RUNX_CWD/grandchild.pid"
sleep 30
