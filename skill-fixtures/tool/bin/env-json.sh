#!/bin/sh
# Prints the RUNX_* and declared variables it received, as one JSON object.
printf '{"title":"%s","spaced":"%s","has_title_path":%s,"region":"%s","cwd_set":%s,"secret":"%s","proxy":"%s"}\n' \
  "$RUNX_INPUT_THREAD_TITLE" "$RUNX_INPUT_REPEATED_SEPARATOR" \
  "$( [ -f "$RUNX_INPUT_THREAD_TITLE_PATH" ] && echo true || echo false )" \
  "$REGION" "$( [ -n "$RUNX_CWD" ] && echo true || echo false )" "$RUNX_FIXTURE_SECRET" "$http_proxy$HTTPS_PROXY"
