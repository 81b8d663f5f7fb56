#!/bin/sh
# A small real job: it greets, then reads its input (standard input, which
# Harrier fetches from the submit machine) and writes a report of it.
echo "Hello, $1, from $(hostname) (pid $$, in $(pwd))"
tmp=$(mktemp)
cat > "$tmp"
echo "lines: $(wc -l < "$tmp")  words: $(wc -w < "$tmp")"
echo "sorted:"
sort "$tmp"
rm -f "$tmp"
echo "hello.sh finished" >&2
