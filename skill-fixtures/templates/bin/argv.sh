#!/bin/sh
# Prints its arguments as a JSON array of strings (arguments are plain words here).
out='['
sep=''
for a in "$@"; do
  out="$out$sep\"$a\""
  sep=','
done
printf '{"argv":%s]}\n' "$out"
