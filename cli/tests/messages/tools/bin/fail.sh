#!/bin/sh
echo "something went wrong" >&2
exit 3
