// Package submit implements HTCondor's submit description language, the
// files users hand to "harrier submit", and turns a description into the job
// ClassAds the agent stores.
//
// Parse reads and checks a whole description; Description.Jobs expands it
// for one cluster. Both report problems as *Error values naming the file and
// line, and return nothing else on error, so a bad file queues no job.
//
// # Language
//
// A description is a sequence of lines: "name = value" commands and macro
// definitions, "+Attr = expr" and "MY.Attr = expr" custom attributes, and
// queue statements. Names are case-insensitive, a line whose first
// non-blank character is "#" is a comment, and a trailing backslash
// continues a line. Every queue statement creates jobs from the commands in
// effect at that point, so a file may change some commands between queue
// statements; process numbers continue across them. The queue forms are
//
//	queue [N]
//	queue [N] [VAR] in [slice] (item item ...)        // also multi-line
//	queue [N] [VAR] matching [files|dirs] [slice] pattern ...
//	queue [N] [VAR[,VAR...]] from [slice] FILE | (rows)
//
// VAR defaults to Item, a slice is Python's [start:end:step], items are
// separated by commas or white space, and each row of "from" gives one value
// per variable, the last taking the rest of the row. FILE and the patterns
// are relative to the submit directory. As in HTCondor, a queue variable
// named like a command ("queue input, arguments from list") sets that
// command for each job.
//
// Macros are expanded when jobs are made: $(name) and $(name:default),
// $ENV(name), $INT(name-or-expr[,format]), $REAL(name-or-expr[,format]),
// $F[pdnxq](name) for parts of a path, $(DOLLAR) for a dollar sign, and the
// per-job macros $(Cluster) $(ClusterId) $(Process) $(ProcId) $(Step) $(Row)
// $(ItemIndex) $(Node) and the queue variables. Every command is also a
// macro ("output = $(executable).out"). An undefined macro expands to the
// empty string, as in HTCondor; a definition that refers to itself, such as
// "args = $(args) -v", uses the previous value. $$(attr) is left for
// match-time substitution. Expansion is bounded in depth and size, so
// cyclic or exploding macros are errors rather than hangs.
//
// # Unknown commands
//
// condor_submit treats any unrecognised "name = value" as a macro definition
// and at most warns, so a misspelt command such as "executible" silently does
// nothing. Harrier refuses it instead, while keeping macros working: a name
// that is neither a command nor referenced as a macro anywhere in the file
// is an "unknown command" error if it is written in lower case (the way
// commands are written) or is a near miss of a command name (two edits, one
// for short names), whatever its case. Other unreferenced names
// ("MyData = ...") are accepted as unused macros. Documented condor_submit
// commands that Harrier does not implement (docker_image, machine_count,
// ...), universes other than vanilla, standard and local, and the if, include
// and error statements are refused with an error that says so.
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
// (0), and one attribute per other command given (MaxRetries, KillSig,
// JobMaxVacateTime, CheckpointInterval, TransferInput, FileRemaps,
// BufferSize, ...). ExitCode is left undefined.
// Sizes accept K, M, G and T suffixes (with or without B or iB), all powers
// of 1024, and a request that is not a plain size is kept as an expression.
//
// Requirements is the user's expression AND-ed with HTCondor's clauses
// (TARGET.Arch == "X86_64"), (TARGET.OpSys == "LINUX"),
// (TARGET.Disk >= RequestDisk) and (TARGET.Memory >= RequestMemory), with
// this machine's Arch and OpSys; like condor_submit, a clause is left out
// when the user's expression already mentions its attribute.
//
// The executable is relative to the submit directory; the other files are
// relative to initialdir, itself relative to the submit directory. Jobs
// checks that the executable exists and can be run, unless
// transfer_executable is false or skip_filechecks is true. Apart from that
// check, reading "from" files and globbing "matching" patterns, Parse and
// Jobs touch nothing outside memory.
package submit
