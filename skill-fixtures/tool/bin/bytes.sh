#!/bin/sh
# Writes N bytes of 'a' to stdout.
head -c "$1" /dev/zero | tr '\0' 'a'
