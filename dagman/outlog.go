package dagman

import (
	"bufio"
	"fmt"
	"os"
	"syscall"
	"time"
)

// outLog is FILE.dag.dagman.out: what the DAG did, one line per step,
// each stamped as condor_dagman stamps them. It is appended to, so a
// recovered run's lines follow the crashed run's.
type outLog struct {
	f *os.File
	w *bufio.Writer
}

func openOutLog(path string) (*outLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the DAG's dagman.out: %w", err)
	}
	return &outLog{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (o *outLog) logf(format string, args ...any) {
	o.w.WriteString(time.Now().Format("01/02/06 15:04:05 "))
	fmt.Fprintf(o.w, format, args...)
	o.w.WriteByte('\n')
}

// flush writes out what was logged; the loop calls it before it waits.
func (o *outLog) flush() { o.w.Flush() }

func (o *outLog) close() {
	o.w.Flush()
	o.f.Close()
}

// summary logs the node counts table condor_dagman prints.
func (e *engine) summary() {
	var c [8]int
	for i, n := range e.dag.Nodes {
		if n.Kind != ServiceNode {
			c[e.nodes[i].status]++
		}
	}
	e.out.logf("DAG status: %d (%s)", int(e.dagStatus()), e.dagStatus())
	e.out.logf("Of %d nodes total:", e.countWork())
	e.out.logf(" Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile")
	e.out.logf("  ===     ===      ===     ===     ===        ===      ===      ===")
	e.out.logf("%5d %7d %8d %7d %7d %10d %8d %8d", c[StatusDone], c[StatusPreRun], c[StatusSubmitted],
		c[StatusPostRun], c[StatusReady], c[StatusNotReady], c[StatusError], c[StatusFutile])
	if e.submitted > 0 {
		e.out.logf("Submitted %d node jobs in %v spent submitting (%.0f a second)", e.submitted,
			e.submitting.Round(time.Millisecond), float64(e.submitted)/e.submitting.Seconds())
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		e.out.logf("Peak resident memory: %d MB", ru.Maxrss>>10) // Linux counts KB
	}
	if e.failed > 0 {
		e.out.logf("ERROR: the following node(s) failed:")
		for i, n := range e.dag.Nodes {
			if e.nodes[i].status == StatusError {
				e.out.logf("  Node %s: %s", n.Name, e.nodes[i].why)
			}
		}
	}
	e.out.flush()
}
