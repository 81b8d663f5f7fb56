#!/bin/sh
# Grows a shell variable to about 200 MB.
x=$(head -c 200000000 /dev/zero | tr '\0' a)
echo "still here with ${#x} bytes"
