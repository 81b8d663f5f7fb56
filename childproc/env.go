package childproc

import (
	"os"
	"runtime"
	"strconv"
)

// Env is the environment for a child process that works for procs
// processors' worth of jobs: the parent's own, with the child's Go runtime
// sized to procs (GOMAXPROCS, at least 1, at most the machine's CPUs) and
// its collector run less often (GOGC=ChildGOGC).
//
// A shadow or a starter works for one claim's jobs, mostly in turn, and a
// machine runs one per claim. Each would otherwise size its runtime to the
// whole machine, and on a busy machine every hand-over between its
// goroutines then wakes an idle processor to look for work that is not
// there: about a tenth of a container job's processor time on a two-core
// machine running eight claims (docs/sandbox-bench.md).
//
// Each of a starter's jobs gets a FUSE server of its own (iofs), whose
// request buffers are a MiB each: in a process whose live heap is a few
// MiB, every job's buffers set off a collection, and the runtime hands
// their pages back to the kernel, so the next job's buffers fault in
// fresh pages, a third of a millisecond a MiB on a virtual machine. A
// collector that waits for the heap to grow five-fold rather than
// two-fold keeps those pages (no more memory is resident: the starters'
// is mostly the program itself).
//
// An administrator's GOMAXPROCS or GOGC in the parent's environment is
// passed on unchanged.
func Env(procs int) []string {
	env := os.Environ()
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		procs = min(max(procs, 1), runtime.NumCPU())
		env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		env = append(env, "GOGC="+strconv.Itoa(ChildGOGC))
	}
	return env
}

// ChildGOGC is the GOGC of the processes Env is for.
const ChildGOGC = 400
