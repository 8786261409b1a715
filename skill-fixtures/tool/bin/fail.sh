#!/bin/sh
echo "something went wrong" >&2
echo "details: exit 3" >&2
exit 3
