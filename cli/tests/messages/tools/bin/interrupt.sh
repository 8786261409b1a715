#!/bin/sh
# Stands for a Ctrl-C: SIGINT to runx, which stops this run and says so.
kill -INT $PPID
sleep 5
