#!/bin/sh
# Writes a warning (and optionally N more bytes) to stderr, then succeeds.
echo "warning: grumbling" >&2
if [ "$RUNX_INPUT_BYTES" -gt 0 ]; then
  head -c "$RUNX_INPUT_BYTES" /dev/zero | tr '\0' 'e' >&2
fi
printf '{"ok":true}\n'
