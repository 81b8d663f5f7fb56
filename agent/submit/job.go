package submit

import (
	"fmt"
	"time"

	"harrier.dev/harrier/classad"
)

// Env is what a description is expanded against: where and by whom it was
// submitted.
type Env struct {
	Dir     string                      // directory of the submit file: relative paths are relative to it (or to initialdir)
	Owner   string                      // Unix user name of the submitter
	Getenv  func(string) (string, bool) // for $ENV(name); nil means an empty environment
	Environ []string                    // NAME=value entries, for getenv
	Now     time.Time                   // submission time; the zero Time means time.Now()
	// UIDDomain, if set, makes User "Owner@UIDDomain"; otherwise User is Owner.
	UIDDomain string
	// Rand returns a random integer in [0,n) for $RANDOM_CHOICE and
	// $RANDOM_INTEGER; nil uses math/rand/v2.
	Rand func(n int) int
	// Command, if set, runs a command line for "include command : ..." and
	// "queue ... from cmd |", in dir, and returns what it wrote to its
	// standard output; [Exec] makes one. Without it such descriptions are
	// refused: a process that reads descriptions on someone else's behalf
	// must leave it nil.
	Command func(dir string, argv []string) ([]byte, error)
	// Defines are condor_submit's command-line "name=value" arguments:
	// Parse reads them as lines before the description's first line.
	Defines []string
	// Append are condor_submit's -append lines: Parse reads them after the
	// description and places them just before its first queue statement.
	// A queue statement among them stands for the description's own, which
	// it may then not have (condor_submit's -queue).
	Append []string
}

// HTCondor's JobStatus values for new jobs, and its HoldReasonCode for jobs
// submitted with "hold = true".
const (
	statusIdle              = 1
	statusHeld              = 5
	holdCodeSubmittedOnHold = 15
)

// A job collects one job's settings while its commands are applied.
type job struct {
	ad    *classad.ClassAd
	exprs map[string]classad.Expr // parsed expressions shared by the jobs of one Jobs call; may be nil

	exe, input, output, errPath, log, iwd string
	requirements                          string
	// universe is "container" or "docker" for a job in its own image,
	// whose reference is image (container_image or docker_image).
	universe, image string
	env             []string // NAME=value from environment
	getenv          []string // patterns of variables to import
	skipChecks      bool
	hold            bool
	requestDisk     bool     // request_disk was given
	requireGPUs     []string // clauses of RequireGPUs (see gpus.go)
	// The retry commands (max_retries, success_exit_code, retry_until)
	// and on_exit_remove, from which finish builds OnExitRemove.
	retries      bool // any retry command was given
	successCode  int64
	retryUntil   classad.Expr
	onExitRemove classad.Expr
}

// newJob returns a job holding HTCondor's defaults, in the attribute order
// job ads are printed in.
func newJob() *job {
	ad := classad.New()
	ad.SetInt("ClusterId", 0)
	ad.SetInt("ProcId", 0)
	ad.SetString("Owner", "")
	ad.SetString("User", "")
	ad.SetInt("JobUniverse", 5)
	ad.SetString("Cmd", "")
	ad.SetString("Arguments", "")
	ad.SetString("Environment", "")
	ad.SetString("Iwd", "")
	ad.SetString("In", "/dev/null")
	ad.SetString("Out", "/dev/null")
	ad.SetString("Err", "/dev/null")
	ad.SetInt("JobStatus", statusIdle)
	ad.SetInt("QDate", 0)
	ad.SetInt("EnteredCurrentStatus", 0)
	ad.SetInt("RequestCpus", 1)
	ad.SetInt("RequestMemory", 128)
	ad.SetInt("RequestDisk", 1)
	ad.Set("Requirements", classad.Literal(classad.Bool(true)))
	ad.SetReal("Rank", 0)
	ad.SetInt("JobPrio", 0)
	ad.SetBool("PeriodicHold", false)
	ad.SetBool("PeriodicRelease", false)
	ad.SetBool("PeriodicRemove", false)
	ad.SetBool("OnExitHold", false)
	ad.SetBool("OnExitRemove", true)
	ad.SetBool("LeaveJobInQueue", false)
	ad.SetInt("JobNotification", 0)
	ad.SetString("ShouldTransferFiles", "NO") // files are reached in place through the shadow
	ad.SetBool("TransferExecutable", true)
	ad.SetBool("WantCheckpoint", true) // Harrier checkpoints jobs where it can; want_checkpoint = false opts out
	ad.SetInt("NumJobStarts", 0)
	return &job{ad: ad}
}

// expr parses src as a ClassAd expression for command name.
func (j *job) expr(name, src string) (classad.Expr, error) {
	if e, ok := j.exprs[src]; ok {
		return e, nil
	}
	e, err := parseExpr(src, name)
	if err == nil && j.exprs != nil {
		j.exprs[src] = e
	}
	return e, err
}

func parseExpr(src, name string) (classad.Expr, error) {
	e, err := classad.ParseExpr(src)
	if err != nil {
		return classad.Expr{}, fmt.Errorf("bad expression for %s: %w", name, err)
	}
	return e, nil
}

// clone returns a copy of j that can be changed without affecting j.
func (j *job) clone() *job {
	c := *j
	c.ad = j.ad.Copy()
	return &c
}
