#!/bin/sh
# Echoes the JSON object it reads on stdin under "received".
printf '{"received":'
cat
printf '}\n'
