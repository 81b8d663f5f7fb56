package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runExecWithLimits is what a starter runs a plain-process job through
// when the job sets resource limits (coresize, stack_size): Go starts a
// process under its parent's limits, and the starter's own must not
// change. It runs as the job's user, sets each RESOURCE=LIMIT (soft and
// hard alike; above the hard limit it inherited only with the privilege
// to raise it, and else at that limit, as HTCondor's starter does when
// it is not root) and becomes the program:
//
//	harrier exec-with-limits 4=0 3=16777216 -- /path/prog prog ARG...
func runExecWithLimits(args []string, _ io.Reader, _ io.Writer) error {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || len(args) < sep+3 {
		return usagef("want RESOURCE=LIMIT... -- PATH ARGV0 [ARG...]")
	}
	for _, a := range args[:sep] {
		res, lim, ok := strings.Cut(a, "=")
		r, err1 := strconv.Atoi(res)
		l, err2 := strconv.ParseUint(lim, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return usagef("bad limit %q: want RESOURCE=LIMIT, both numbers", a)
		}
		if err := setLimit(r, l); err != nil {
			return fmt.Errorf("set resource limit %d to %d: %w", r, l, err)
		}
	}
	path, argv := args[sep+1], args[sep+2:]
	err := syscall.Exec(path, argv, os.Environ())
	return fmt.Errorf("execute %s: %w", path, err)
}

// setLimit sets resource r to l, or to its hard limit where l is above
// it and this process may not raise it.
func setLimit(r int, l uint64) error {
	err := unix.Setrlimit(r, &unix.Rlimit{Cur: l, Max: l})
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(r, &cur); err != nil {
		return err
	}
	if l <= cur.Max {
		return err // not a raise: something else refused it
	}
	return unix.Setrlimit(r, &unix.Rlimit{Cur: cur.Max, Max: cur.Max})
}
