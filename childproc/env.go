package childproc

import (
	"os"
	"runtime"
	"strconv"
)

// Env is the environment for a child process that works for procs
// processors' worth of jobs: the parent's own, with the child's Go runtime
// sized to procs (GOMAXPROCS, at least 1, at most the machine's CPUs).
//
// A shadow or a starter works for one claim's jobs, mostly in turn, and a
// machine runs one per claim. Each would otherwise size its runtime to the
// whole machine, and on a busy machine every hand-over between its
// goroutines then wakes an idle processor to look for work that is not
// there: about a tenth of a container job's processor time on a two-core
// machine running eight claims (docs/sandbox-bench.md). An administrator's
// GOMAXPROCS in the parent's environment is passed on unchanged.
func Env(procs int) []string {
	env := os.Environ()
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		return env
	}
	procs = min(max(procs, 1), runtime.NumCPU())
	return append(env, "GOMAXPROCS="+strconv.Itoa(procs))
}
