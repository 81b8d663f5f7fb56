#!/bin/sh
# Runs on an execute machine that has none of these files: every name below
# is resolved by the job's shadow (the two-phase open) and read or written
# on the submit machine through iofs.
set -e
echo "working in $(pwd) on $(hostname)"
# readings.csv.gz is stored compressed; compress_files makes the job read
# it as plain text (and would compress what it wrote).
lines=$(wc -l < readings.csv.gz)
total=$(awk -F, '{ s += $2 } END { print s }' readings.csv.gz)
echo "readings: $lines lines, total $total"
# summary.txt is remapped (file_remaps) to results/summary.txt.
sort -t, -k2 -n readings.csv.gz | tail -3 > summary.txt
# journal.log is append-only (append_files): every write goes to its end.
echo "run at $(date +%s): $lines readings" >> journal.log
# big.dat is read through a block cache with read-ahead (buffer_files).
echo "big.dat: $(wc -c < big.dat) bytes, checksum $(cksum < big.dat | cut -d' ' -f1)"
