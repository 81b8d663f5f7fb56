package dagman

import "time"

// A DAG is a parsed and checked DAG file with everything it includes and
// splices. Spliced nodes are named "SPLICE+NODE", as in HTCondor. A DAG is
// not changed by Run and may be run more than once.
type DAG struct {
	// File is the DAG file as named to ParseFile; output files are named
	// after it.
	File string
	// Nodes in the order they were defined, splices inlined where they
	// were spliced; the FINAL node, if any, is last.
	Nodes  []*Node
	byName map[string]*Node
	// Final is the FINAL node, or nil.
	Final *Node
	// MaxJobs is each CATEGORY's MAXJOBS throttle.
	MaxJobs map[string]int
	// Config is the file named by CONFIG, "" if none.
	Config string
	// Dot describes the DOT file, or is nil.
	Dot *DotSpec
	// NodeStatus describes the NODE_STATUS_FILE, or is nil.
	NodeStatus *NodeStatusSpec
	// Edges counts the PARENT-CHILD dependencies.
	Edges int
	// ParseTime is how long ParseFile took to read and check the DAG.
	ParseTime time.Duration
}

// Node returns the node named name, or nil.
func (d *DAG) Node(name string) *Node { return d.byName[name] }

// NodeKind says how a node's work is done.
type NodeKind uint8

const (
	JobNode     NodeKind = iota // JOB: a submit file
	SubDAGNode                  // SUBDAG EXTERNAL: a DAG run as the node's job
	FinalNode                   // FINAL: runs last, whatever happened before
	ServiceNode                 // SERVICE: runs beside the DAG, removed at its end
)

func (k NodeKind) String() string {
	return [...]string{"JOB", "SUBDAG EXTERNAL", "FINAL", "SERVICE"}[k]
}

// A Node is one vertex of the DAG.
type Node struct {
	Name string
	Kind NodeKind
	// File is the node's submit file (or DAG file, for SUBDAG EXTERNAL),
	// relative to Dir unless absolute.
	File string
	// Dir is the directory the node's job is submitted from and its
	// scripts run in: the parser's directory joined with DIR.
	Dir  string
	Noop bool
	// Done marks a node done before the DAG runs (DONE, or a rescue DAG).
	Done bool

	Pre, Post, Hold *Script
	// Retries is RETRY's count; UnlessExit, if set, is a node exit value
	// that is not retried.
	Retries    int
	UnlessExit *int
	Vars       []Var
	Priority   int
	Category   string
	// AbortOn, if set, aborts the DAG when the node exits with its value.
	AbortOn *AbortOn
	// PreSkip, if set, is the PRE script exit value that skips the job and
	// POST script and counts the node as done.
	PreSkip *int

	Parents  []*Node
	Children []*Node

	index int
	pos   pos // where the node was defined
}

// A Script is a node's PRE, POST or HOLD script.
type Script struct {
	// Exe is the program, run in the node's directory; Args are its
	// arguments before macro substitution ($JOB, $RETURN, ...).
	Exe  string
	Args []string
	// DeferStatus and DeferTime: a script that exits with DeferStatus is
	// run again DeferTime later, without counting as a failure (DEFER).
	Defer       bool
	DeferStatus int
	DeferTime   time.Duration
}

// A Var is one VARS macro for the node's submit file.
type Var struct {
	Name, Value string
	// Append puts the macro after the submit file (overriding it) rather
	// than before it.
	Append bool
}

// AbortOn is ABORT-DAG-ON: when the node exits with Value, the DAG is
// aborted and exits with Return.
type AbortOn struct {
	Value  int
	Return int
}

// DotSpec is the DOT command.
type DotSpec struct {
	File      string
	Update    bool   // rewrite the file as the DAG runs
	Overwrite bool   // false: write FILE.0, FILE.1, ... instead
	Include   string // a file whose text goes inside the graph
}

// NodeStatusSpec is the NODE_STATUS_FILE command.
type NodeStatusSpec struct {
	File string
	// MinUpdate is the least time between two rewrites.
	MinUpdate time.Duration
	// AlwaysUpdate rewrites the file even when nothing changed.
	AlwaysUpdate bool
}

// pos is a place in a DAG file.
type pos struct {
	file string
	line int
}

func (p pos) errorf(err error, format string, args ...any) *ParseError {
	return &ParseError{File: p.file, Line: p.line, Err: wrapf(err, format, args...)}
}
