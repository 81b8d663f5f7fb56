#!/bin/sh
# Makes the example's inputs: compressed readings and a 4 MiB data file.
cd "$(dirname "$0")"
mkdir -p results
i=0
: > readings.csv
while [ $i -lt 200 ]; do i=$((i + 1)); echo "sensor$((i % 7)),$((i * 37 % 101))" >> readings.csv; done
gzip -f readings.csv
head -c 4194304 /dev/urandom > big.dat
