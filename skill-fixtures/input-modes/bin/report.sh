#!/bin/sh
# Reports its arguments and what arrived on stdin, as JSON.
stdin=$(cat)
printf '{"argc":%s,"first":"%s","stdin_bytes":%s,"stdin":%s}\n' "$#" "${1:-}" "${#stdin}" "${stdin:-null}"
