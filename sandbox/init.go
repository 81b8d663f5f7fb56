package sandbox

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	// The nsexec C constructor joins the container's namespaces before the
	// Go runtime starts in the re-executed init.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// initArg is the argument libcontainer re-executes the binary with.
const initArg = "init"

// IsInit reports whether this process is a container's init, re-executed
// by libcontainer (its first argument is "init").
func IsInit() bool { return len(os.Args) > 1 && os.Args[1] == initArg }

// Init turns this process into the job: it finishes setting up the
// container and executes the job's program. It never returns. Call it
// before anything else (flag parsing, logging, goroutines) when IsInit is
// true, with the calling goroutine locked to the main OS thread.
func Init() { libcontainer.Init() }
