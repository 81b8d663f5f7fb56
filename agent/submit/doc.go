// Package submit implements HTCondor's submit description language, the
// files users hand to "harrier submit", and turns a description into the job
// ClassAds the agent stores. docs/htcondor-compatibility.md lists every
// condor_submit command and what Harrier does with it.
//
// Parse reads and checks a whole description; Description.Jobs expands it
// for one cluster. Both report problems as *Error values naming the file and
// line (an included file's own name and line), and return nothing else on
// error, so a bad file queues no job.
//
// # Language
//
// A description is read from top to bottom, as condor_submit reads it. It
// is a sequence of logical lines: white space around each line is dropped,
// a line whose first character is "#" is a comment, and a trailing
// backslash continues a line (a comment line inside a continued line is
// skipped; a blank line ends it). A line is
//
//	name = value              a command or a macro definition
//	name @=tag                a value made of the following lines, up to "@tag"
//	+Attr = expr, MY.Attr = expr   a custom attribute of the job ad
//	queue ...                 a queue statement
//	if COND, elif COND, else, endif
//	include [ifexist] : FILE
//	include [ifexist] command [into FILE] : COMMAND   (or include : COMMAND |)
//	error [code] : MESSAGE, warning : MESSAGE
//
// Names are case-insensitive. Every queue statement creates jobs from the
// commands in effect at that point, so a file may change some commands
// between queue statements; process numbers continue across them. The queue
// forms are
//
//	queue [N]
//	queue [N] [VAR] in [slice] (item item ...)        // also multi-line
//	queue [N] [VAR] matching [files|dirs] [slice] pattern ...
//	queue [N] [VAR[,VAR...]] from [slice] FILE | COMMAND "|" | (rows)
//
// VAR defaults to Item, a slice is Python's [start:end:step], items are
// separated by commas or white space, and each row of "from" gives one value
// per variable, the last taking the rest of the row. FILE and the patterns
// are relative to the submit directory. As in HTCondor, a queue variable
// named like a command ("queue input, arguments from list") sets that
// command for each job.
//
// # Macros
//
// Macros are expanded when jobs are made, with the definitions in effect at
// the queue statement; a definition that refers to itself ("args = $(args)
// -v") takes the earlier value at once. Every command is also a macro. The
// recognition rules are condor_submit's:
//
//   - $(name) and $(name:default), where name is made of letters, digits,
//     "_", "." and "/", and the default of those, spaces, "$", ",", "\" and
//     ":" (a parenthesis in it skips to the next ")", so $(A:$(B)) works).
//     Anything else after "$(" is not a reference and stays as written: the
//     shell's $(id -u), $((i+1)) and ${HOME:-x} reach the job unchanged. An
//     undefined macro is empty; the default applies to a macro undefined or
//     defined empty. A macro's value is read again for references, and text
//     before a replacement is never read again.
//   - $ENV(name[:default]) (an unset variable without default is the word
//     UNDEFINED), $RANDOM_CHOICE(a,b,... or list), $RANDOM_INTEGER(min,max
//     [,step]) (drawn for each job), $CHOICE(index, a,b,... or list),
//     $SUBSTR(name,start[,length]), $INT(name[,format]) and
//     $REAL(name[,format]) with a C printf format and text around it,
//     $STRING(name[,format]), $EVAL(name), $BASENAME, $DIRNAME and
//     $F<letters>(name) with the letters f p d n x b q a u w. Function names
//     are case-sensitive; a function's body ends at its first ")". Its
//     argument is a macro name or, if it names none, the text itself.
//   - $(DOLLAR) is a dollar sign once everything else is expanded.
//   - $$(attr), $$(attr:default) and $$([expr]) are left for match time;
//     references inside them are expanded. No Harrier daemon substitutes
//     them yet, so a command or attribute that still holds one is refused.
//   - Per job: $(Cluster) $(ClusterId) $(Process) $(ProcId), and $(Step)
//     $(Row) $(ItemIndex) $(Node) (empty outside the parallel universe),
//     which a definition in the file overrides; the queue variables.
//     Before the file is read: $(ARCH) $(OPSYS) $(OPSYSANDVER)
//     $(OPSYSMAJORVER) $(OPSYSVER) $(IsLinux) $(IsWindows) $(SUBMIT_FILE).
//
// Expansion is bounded in depth, substitutions and size, so cyclic or
// exploding macros are errors rather than hangs.
//
// # Statements
//
// if, elif, else and endif skip the lines of untaken branches, unread. A
// condition is macro-expanded first (one that expands to nothing is false),
// may start with "!", and is then a number (true unless zero), true,
// false, yes, no, t or f; "defined NAME" (defined and not empty); or
// "version OP x.y[.z]", comparing with the HTCondor version whose language
// this package speaks (languageVersion). Compound conditions are refused,
// as by condor_submit. Conditions, include names and error and warning
// messages see the macros defined above them and the submitter's
// environment, not per-job macros.
//
// An included file is relative to the submit directory and read as part of
// the description. An included command, and the command of "queue ... from
// COMMAND |", run only when Env.Command is set: harrier submit sets it with
// Exec, so they run as the submitting user in the submit directory, as
// condor_submit runs them. "into FILE" keeps a command's output in FILE and
// reads FILE instead once it exists; ifexist makes a missing file or a
// failing command include nothing. An error statement stops the
// description with its message; warning statements are collected by
// Description.Warnings.
//
// # Commands: nothing accepted and ignored
//
// condor_submit treats any unrecognised "name = value" as a macro definition
// and at most warns, so a misspelt command such as "executible" silently does
// nothing. Harrier refuses it instead, while keeping macros working: a name
// that is neither a command nor referred to as a macro anywhere in the file
// is an "unknown command" error if it is written in lower case (the way
// commands are written) or is a near miss of a command name (two edits, one
// for short names), whatever its case. Other unreferred names
// ("MyData = ...") are accepted as unused macros.
//
// A documented condor_submit command that no Harrier daemon acts on is
// refused with its name and what to do instead (refuse.go), even when it is
// used as a macro; one whose value is what Harrier does anyway is accepted
// (should_transfer_files = NO, notification = never, universe = standard, which is what
// every Harrier job gets). An empty value unsets any command.
//
// # Job ads
//
// Jobs produces ads with HTCondor's attribute names and defaults: ClusterId,
// ProcId, Owner, User, Cmd, Arguments and Environment (in the V2 syntax of
// package jobargs, whichever style the file used), Iwd, In, Out, Err (all
// absolute; "/dev/null" by default) and UserLog, JobUniverse (5, vanilla),
// JobStatus (1 idle, or 5 held with HoldReasonCode 15 for "hold = true"),
// QDate, EnteredCurrentStatus, RequestCpus (1), RequestMemory in MiB (128),
// RequestDisk in KiB (by default the size of the executable and input, also
// recorded as DiskUsage; only a default request carries DiskUsage, and the
// starter holds a job for disk only over a request the user made), Rank
// (0.0), JobPrio (0), the policy expressions PeriodicHold, PeriodicRelease,
// PeriodicRemove, OnExitHold (false) and OnExitRemove (true), NumJobStarts
// (0), ShouldTransferFiles ("NO"), and one attribute per other command given
// (JobMaxRetries, JobSuccessExitCode, KillSig, JobMaxVacateTime,
// CheckpointInterval, FileRemaps, BufferSize, ...). The retry commands
// become OnExitRemove as condor_submit makes it: "NumJobCompletions >
// JobMaxRetries || ExitCode is <success_exit_code, 0 by default>", then
// "|| ExitCode is N" for retry_until = N or "|| (expr)" for an expression,
// then "|| (on_exit_remove)" if one was given; success_exit_code or
// retry_until without max_retries sets JobMaxRetries to condor_submit's
// default of 2.
// ExitCode is left undefined. getenv takes true, false or a match list
// (names and * patterns, ! to reject, case-insensitive). Sizes accept K, M,
// G and T suffixes (with or without B or iB), all powers of 1024, and a
// request that is not a plain size is kept as an expression.
//
// Requirements is the user's expression AND-ed with condor_submit's clauses
// (TARGET.Arch == "X86_64"), (TARGET.OpSys == "LINUX"),
// (TARGET.Disk >= RequestDisk), (TARGET.Memory >= RequestMemory) and
// (TARGET.Cpus >= RequestCpus), with this machine's Arch and OpSys; a
// clause is left out when the user's expression already mentions its
// attribute. A job that requests GPUs (request_gpus other than 0) gets
// (TARGET.GPUs >= RequestGPUs) as well and, with RequireGPUs (require_gpus,
// gpus_minimum_capability, gpus_maximum_capability, gpus_minimum_memory),
// that expression over the properties the slot's GPUs share (Capability
// becomes TARGET.GPUs_Capability; see gpus.go).
//
// The executable is relative to the submit directory; the other files are
// relative to initialdir, itself relative to the submit directory. Jobs
// checks that the executable exists and can be run, unless skip_filechecks
// is true. Apart from that check, reading included files, "from" files and
// globbing "matching" patterns, and the commands Env.Command runs, Parse and
// Jobs touch nothing outside memory.
package submit
