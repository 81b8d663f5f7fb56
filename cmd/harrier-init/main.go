// Command harrier-init becomes the first process of a Harrier job's
// container: it finishes the container's set-up and executes the job.
//
// libcontainer starts a container by re-executing the calling binary,
// harrier, whose Go runtime and package initialisers cost a container
// job about a sixth of its processor time; harrier hands over to this
// binary before its own runtime starts (see sandbox.InstallInit), so a
// job pays only for what the container's set-up needs. It links nothing
// but libcontainer, and must be built from the same module as harrier:
//
//	go build -o bin/harrier-init ./cmd/harrier-init
package main

import (
	"os"

	"github.com/opencontainers/runc/libcontainer"
	// nsexec, a C constructor, joins the container's namespaces before
	// the Go runtime starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init() // never returns
	}
}

func main() {
	os.Stderr.WriteString("harrier-init: run by harrier as a container's first process, not by hand\n")
	os.Exit(2)
}
