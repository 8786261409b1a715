#!/bin/sh
# Reports how the large input arrived: never inline, always by path.
if [ -n "$RUNX_INPUT_BLOB" ]; then inline=true; else inline=false; fi
size=$(wc -c < "$RUNX_INPUT_BLOB_PATH" | tr -d ' ')
printf '{"inline":%s,"path_bytes":%s,"inputs_json_inline":%s}\n' "$inline" "$size" "$( [ -n "$RUNX_INPUTS_JSON" ] && echo true || echo false )"
