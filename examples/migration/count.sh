#!/bin/sh
# Counts to $1, one number a quarter second, appending each to count.txt in
# the job's directory (which is the submit machine's, through iofs) and
# printing it. Vacated and restored elsewhere, it goes on where it was: the
# numbers in count.txt and in its output run on without a gap or a repeat.
n=${1:-40}
i=0
while [ "$i" -lt "$n" ]; do
	i=$((i + 1))
	echo "$i" >> count.txt
	echo "count $i on $(hostname)"
	sleep 0.25
done
