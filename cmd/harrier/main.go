// Command harrier is Harrier's one binary: the daemons of a pool and the
// tools its users run.
//
//	harrier pool up --dir DIR [--startds N] [--detach]   start a personal pool
//	harrier pool down --dir DIR                           stop it
//	harrier submit FILE                                   queue jobs
//	harrier transfer-data ID                              fetch a spooled job's outputs
//	harrier q | history | status | watch-q                look at jobs and machines
//	harrier rm | hold | release | wait ID...              act on jobs
//	harrier qedit ID ATTR VALUE                           change a queued job
//	harrier tail [-follow] ID                             a running job's output
//	harrier ssh-to-job ID [-- COMMAND...]                 a shell or command in a running job
//	harrier classad eval ...                              evaluate ClassAd expressions
//	harrier userprio                                      show user priorities
//	harrier reconfig | off | on | restart [-daemon NAME] [HOST]  administer the daemons
//	harrier config-val [-daemon NAME] [-verbose] KEY... | -dump  show the configuration
//	harrier drain [-graceful | -quick | -cancel] HOST      take a machine out of service
//	harrier who [HOST]                                    the daemons this host's masters run
//	harrier bench negotiate --machines M --jobs J ...     time one negotiation cycle
//	harrier daemon matchmaker|agent|startd --config FILE  run one daemon
//
//	harrier token create | list | revoke                  tokens for the remote API
//
// Tools find their pool with --pool DIR or HARRIER_POOL=DIR, or call an
// agent on another host with --remote HOST and a token.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"harrier.dev/harrier/sandbox"
)

func init() {
	// Keep the main goroutine on the main OS thread: container and
	// checkpoint code must never leave that thread in another namespace.
	runtime.LockOSThread()
	// A container's init: libcontainer re-executes this binary as
	// "harrier init" inside the new namespaces, before anything else runs.
	if sandbox.IsInit() {
		sandbox.Init()
	}
}

// usageError is a mistake in how a command was called; main prints it with
// the command's usage and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError ends the program with a given status and no message of its own.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

type command struct {
	name  string
	usage string
	run   func(args []string, stdin io.Reader, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"pool", "pool up --dir DIR [--startds N] [--store embedded|postgres://...] [--detach] | pool down --dir DIR", runPool},
		{"submit", "submit [--pool DIR] [-spool] [-dry-run FILE] [-terse | -verbose] [-append LINE]... [-batch-name NAME] [-maxjobs N] [NAME=VALUE]... [FILE | -] [-queue ARGS]", runSubmit},
		{"transfer-data", "transfer-data [--pool DIR] [-constraint EXPR] [-all] [ID | OWNER]...", runTransferData},
		{"submit-dag", "submit-dag [--pool DIR] [-maxjobs N] [-maxidle N] [-maxpre N] [-maxpost N] [-autorescue 0|1] [-dorescuefrom N] [-AlwaysRunPost] [-batch-name NAME] [-no_submit] FILE.dag", runSubmitDag},
		{"dagman", "dagman [--pool DIR] [-maxjobs N] [-maxidle N] [-maxpre N] [-maxpost N] [-autorescue 0|1] [-dorescuefrom N] [-AlwaysRunPost] FILE.dag (the job submit-dag queues)", runDagman},
		{"q", "q [--pool DIR] [-nobatch | -hold | -hold-codes | -run | -idle | -totals | -json | -long | -af[:jht,lngVr] EXPR... | -better-analyze] [-currentrun | -cputime] [-attributes A,...] [-allusers] [-constraint EXPR] [ID | OWNER]...", runQ},
		{"history", "history [--pool DIR] [-json] [-long] [-af[:jht,lngVr] EXPR...] [-limit N] [ID...]", runHistory},
		{"status", "status [--pool DIR] [-compact | -totals | -run | -state | -schedd | -daemons | -master | -negotiator | -json | -long | -af[:ht,lngVr] EXPR...] [-avail | -claimed] [-constraint EXPR] [-sort EXPR]... [-attributes A,...] [-limit N] [NAME...]", runStatus},
		{"rm", "rm [--pool DIR] [-reason TEXT] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("rm")},
		{"hold", "hold [--pool DIR] [-reason TEXT] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("hold")},
		{"release", "release [--pool DIR] [-reason TEXT] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("release")},
		{"vacate", "vacate [--pool DIR] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("vacate")},
		{"checkpoint", "checkpoint [--pool DIR] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("checkpoint")},
		{"suspend", "suspend [--pool DIR] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("suspend")},
		{"continue", "continue [--pool DIR] [-constraint EXPR] [-all] [ID | OWNER]...", actCommand("continue")},
		{"qedit", "qedit [--pool DIR] {ID | OWNER | -constraint EXPR} ATTR VALUE [ATTR VALUE | ATTR=VALUE]...", runQedit},
		{"watch-q", "watch-q [--pool DIR] [-users U,...] [-clusters C,...] [-batches NAME,...] [-exit all|any|none,active|done|idle|held[,CODE]]... [-interval SECONDS] [-refresh | -no-refresh]", runWatchQ},
		{"ssh-to-job", "ssh-to-job [--pool DIR] [-auto-retry] ID [-- COMMAND ARGS...]", runSshToJob},
		{"tail", "tail [--pool DIR] [-follow] [-maxbytes N] [-stderr] [-no-stdout] ID [FILE...]", runTail},
		{"wait", "wait [--pool DIR] [-wait SECONDS] [-num N] [-echo] [-status] LOGFILE [ID] | wait [--pool DIR] [-wait SECONDS] ID", runWait},
		{"classad", "classad eval [-ad FILE|-] [AD-ATTRS...] EXPR...", runClassad},
		{"userprio", "userprio [--pool DIR] [-json | -long] | userprio -setfactor USER F | userprio -resetusage USER", runUserprio},
		{"reserve", "reserve [--pool DIR] --nodes N --start T --end T [--user USER] | reserve -list | reserve -cancel ID", runReserve},
		{"bench", "bench negotiate [--machines M] [--jobs J] [--users U] [--autoclusters A] [--runs N] [--baseline JOBS] | bench throughput [--jobs N] [--startds S] [--slots K] [--queue Q [--held]] [--dag [--chain C] [--kill-dagman D]] [--input-mb MB] [--sandbox process|container [--image]] [--store embedded|postgres://...] [--profile PREFIX]", runBench},
		{"token", "token create [-identity USER] [-lifetime D] [-scope read,write] [-key NAME] [-token NAME] | token list | token revoke ID | token revoke -all-of USER", runToken},
		{"pki", "pki init --dir DIR [--pool NAME] | pki issue --dir DIR [--hosts ADDR,...] [--out DIR] ROLE@HOST", runPKI},
		{"master", "master --config FILE [--name HOST] [--daemons LIST]", runMaster},
		{"reconfig", "reconfig [--pool DIR] [HOST]", runReconfig},
		{"off", "off [--pool DIR] [-graceful | -peaceful | -fast] [-daemon NAME] [HOST]", daemonControl("off")},
		{"on", "on [--pool DIR] [-daemon NAME] [HOST]", daemonControl("on")},
		{"restart", "restart [--pool DIR] [-daemon NAME] [HOST]", daemonControl("restart")},
		{"config-val", "config-val [--pool DIR] [-daemon NAME [-host HOST]] [-verbose] {KEY... | -dump}", runConfigVal},
		{"drain", "drain [--pool DIR] [-graceful | -quick | -cancel] HOST", runDrain},
		{"who", "who [--pool DIR] [HOST]", runWho},
		{"daemon", "daemon matchmaker|agent|startd --config FILE [--name NAME]", runDaemon},
		{"shadow", "shadow (started by the agent)", runShadowProcess},
		{"starter", "starter (started by a startd)", runStarterProcess},
		{"exec-with-limits", "exec-with-limits RESOURCE=LIMIT... -- PATH ARGV0 [ARG...] (run by a starter)", runExecWithLimits},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		return 2
	}
	global, args := globalOptions(args)
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(append(global, args[1:]...), stdin, stdout)
		var ue usageError
		var ee exitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return int(ee)
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "harrier %s: %v\nusage: harrier %s\n", c.name, err, c.usage)
			return 2
		default:
			fmt.Fprintf(stderr, "harrier %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "harrier: unknown command %q\n", args[0])
	printUsage(stderr)
	return 2
}

// globalOptions takes the options given before the command that every user
// tool takes ("harrier --remote HOST q"), to be passed to the tool.
func globalOptions(args []string) (global, rest []string) {
	for len(args) >= 2 && strings.HasPrefix(args[0], "-") {
		name := strings.TrimLeft(args[0], "-")
		if name != "remote" && name != "token" && name != "pool" {
			break
		}
		global, args = append(global, "-"+name, args[1]), args[2:]
	}
	return global, args
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  harrier %s\n", c.usage)
	}
}

func runClassad(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "eval" {
		return usagef("want a subcommand: eval")
	}
	return runClassadEval(args[1:], stdin, stdout)
}
