package jobqueue

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// JobID names a job: Proc is its index within cluster Cluster.
type JobID struct {
	Cluster, Proc int
}

// String returns the HTCondor form "cluster.proc", for example "12.3".
func (id JobID) String() string {
	return strconv.Itoa(id.Cluster) + "." + strconv.Itoa(id.Proc)
}

// Compare orders job IDs by cluster, then proc; it returns -1, 0 or +1.
func (id JobID) Compare(other JobID) int {
	if c := cmp.Compare(id.Cluster, other.Cluster); c != 0 {
		return c
	}
	return cmp.Compare(id.Proc, other.Proc)
}

// ParseJobID parses "cluster.proc" with non-negative decimal numbers.
func ParseJobID(s string) (JobID, error) {
	cs, ps, ok := strings.Cut(s, ".")
	if !ok {
		return JobID{}, fmt.Errorf("parse job id %q: want cluster.proc", s)
	}
	c, err := parseIndex(cs)
	if err != nil {
		return JobID{}, fmt.Errorf("parse job id %q: cluster: %w", s, err)
	}
	p, err := parseIndex(ps)
	if err != nil {
		return JobID{}, fmt.Errorf("parse job id %q: proc: %w", s, err)
	}
	return JobID{Cluster: c, Proc: p}, nil
}

func parseIndex(s string) (int, error) {
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, fmt.Errorf("%q is not a non-negative number", s)
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
