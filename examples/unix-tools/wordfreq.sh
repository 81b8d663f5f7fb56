#!/bin/sh
# Counts the words of its standard input with unmodified system tools:
# tr and sort split and order, awk formats, python3 checks the total.
set -e
tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | grep . | sort | uniq -c | sort -k1,1nr -k2 > counts.txt
awk '{ printf "%-10s %d\n", $2, $1 }' counts.txt
/usr/bin/python3 -c '
import sys
total = sum(int(line.split()[0]) for line in open("counts.txt"))
print("total", total)
'
