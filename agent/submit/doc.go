// Package submit implements HTCondor's submit description language, the
// files users hand to "harrier submit", and turns a description into the job
// ClassAds the agent stores.
//
// A description is a sequence of lines: "name = value" commands and macro
// definitions, "+Attr = expr" and "MY.Attr = expr" custom attributes, and
// queue statements. Names are case-insensitive, "#" starts a comment line and
// a trailing backslash continues a line. Every queue statement creates jobs
// from the commands in effect at that point, so a file may change a few
// commands between queue statements. The queue forms are
//
//	queue [N]
//	queue [N] [VAR] in [slice] (item item ...)        // also multi-line
//	queue [N] [VAR] matching [files|dirs] [slice] pattern ...
//	queue [N] [VAR[,VAR...]] from [slice] FILE | (rows)
//
// where VAR defaults to Item and a slice is Python's [start:end:step].
//
// Macros are expanded when jobs are made: $(name) and $(name:default),
// $ENV(name), $INT(expr[,format]), $REAL(expr[,format]), $F[pdnxq](name) for
// parts of a path, $(DOLLAR) for a dollar sign, and the per-job macros
// $(Cluster) $(ClusterId) $(Process) $(ProcId) $(Step) $(Row) $(ItemIndex)
// $(Node) and the queue variables. An undefined macro expands to the empty
// string, as in HTCondor; a definition that refers to itself, such as
// "args = $(args) -v", uses the previous value. $$(attr) is left for the
// matchmaker to substitute.
//
// # Unknown commands
//
// condor_submit treats any unrecognised "name = value" as a macro definition
// and at most warns, so a misspelt command such as "executible" silently does
// nothing. Harrier refuses it instead, while keeping macros working: a name
// that is neither a command nor referenced as a macro anywhere in the file
// is an "unknown command" error if it is written in lower case (the way
// commands are written) or is within two edits of a command name. Other
// unreferenced names (MyData = ...) are accepted as unused macros. Documented
// condor_submit commands that Harrier does not implement (docker_image,
// machine_count, ...) and the conditional and include statements are refused
// with an error that says so.
//
// # Job ads
//
// Jobs produces ads with HTCondor's attribute names: ClusterId, ProcId,
// Owner, Cmd, Arguments and Environment (V2 syntax, see package jobargs),
// In, Out, Err, UserLog and Iwd as absolute paths, JobUniverse, JobStatus,
// RequestCpus, RequestMemory (MiB), RequestDisk (KiB), Requirements (the
// user's expression AND-ed with Arch, OpSys, Disk and Memory clauses unless
// the user's expression already mentions those attributes) and the policy
// expressions, with HTCondor's defaults. Parse and Jobs are pure apart from
// reading the files of "queue ... from FILE", globbing for "matching" and
// checking the executable; every error names the file and line.
package submit
