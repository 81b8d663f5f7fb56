package shadow

import (
	"errors"
)

// Spec is what the agent tells a shadow about a job to serve. It travels
// in a Command on the shadow's standard input.
//
// A shadow runs as the job's owner, who can read anything it holds, so it
// holds nothing that lets the owner act as anyone but themselves for this
// job: no pool certificate (it serves starters with a session certificate
// of its own, which they pin, see pki.Session) and no claim id (the agent
// activates the claim itself). The secret is the job's alone: it proves to
// this shadow that a starter runs this job.
type Spec struct {
	JobAd string `json:"job_ad"`
	// Secret is what the job's starter presents; the agent gives the
	// same to the startd when it activates the claim.
	Secret string `json:"secret"`
	// ListenHost is the address the shadow listens on; starters on the
	// execute machines must be able to reach it.
	ListenHost string `json:"listen_host"`
	// CAPEM is the pool CA's certificate, by which the shadow knows a
	// starter: only a startd's certificate is accepted.
	CAPEM []byte `json:"ca_pem"`
	// CheckpointDir is the agent's image store for this job's owner (a
	// descriptor the agent passed, /proc/self/fd/N: the spool above it is
	// closed to the owner), and CheckpointKey the job's name in it; empty
	// when the job keeps none.
	CheckpointDir string `json:"checkpoint_dir,omitempty"`
	CheckpointKey string `json:"checkpoint_key,omitempty"`
}

// Command is sent by the agent to a shadow on its standard input (see
// childproc). A shadow serves the jobs of one claim in turn: Job starts
// the next one, once the previous one's final event has been reported, and
// the other fields concern the job being served. The end of the stream
// stops the job being served and the shadow.
type Command struct {
	// Job is the next job to serve.
	Job *Spec `json:"job,omitempty"`
	// Kill asks the shadow to stop the job (removal, hold); Reason is
	// recorded with it. The job gets its kill signal and its grace time
	// before SIGKILL, unless Fast: then SIGKILL at once.
	Kill   bool   `json:"kill,omitempty"`
	Reason string `json:"reason,omitempty"`
	Fast   bool   `json:"fast,omitempty"`
	// Checkpoint asks for a checkpoint of the job now; with Vacate the
	// job stops after it, to run again elsewhere.
	Checkpoint bool `json:"checkpoint,omitempty"`
	Vacate     bool `json:"vacate,omitempty"`
	// Suspend asks for the job's processes to be stopped where they are
	// for its owner, or with Resume to run on.
	Suspend bool `json:"suspend,omitempty"`
	Resume  bool `json:"resume,omitempty"`
	// Shell concerns a process started in the job for its owner
	// (harrier ssh-to-job).
	Shell *ShellCommand `json:"shell,omitempty"`
}

// ShellWindow is how many messages of one process in the job (its input
// to the shadow, its output to the agent) may be on their way at once:
// each side acknowledges those it has passed on, and the other sends no
// more until it has. Neither buffers more, and a process whose reader
// is slow is held up alone, never the job's own commands and events.
const ShellWindow = 8

// ShellChunk bounds the data of one message of a process in the job.
const ShellChunk = 32 << 10

// ShellCommand is the agent's side of a process in the job; Session
// names it, and one of the other fields is set.
type ShellCommand struct {
	Session uint64 `json:"session"`
	// Open starts the process. A shadow that cannot start it answers
	// with ShellExit.Refused.
	Open *ShellOpen `json:"open,omitempty"`
	// Input, EOF and Resize go to the process, each counting against
	// ShellWindow.
	Input  []byte     `json:"input,omitempty"`
	EOF    bool       `json:"eof,omitempty"`
	Resize *ShellSize `json:"resize,omitempty"`
	// Acked is how many output messages the agent has passed on since
	// its last acknowledgement.
	Acked int `json:"acked,omitempty"`
	// Close ends the process: the one who asked for it went away.
	Close bool `json:"close,omitempty"`
}

// ShellOpen is a process to start in the job: Args (none: a shell), with
// a terminal when TTY.
type ShellOpen struct {
	Args []string  `json:"args,omitempty"`
	TTY  bool      `json:"tty,omitempty"`
	Size ShellSize `json:"size"`
	Term string    `json:"term,omitempty"`
}

// ShellSize is the size of a process's terminal.
type ShellSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// ShellEvent is the shadow's side of a process in the job (EventShell):
// its start, its output on Fd, an acknowledgement of Acked input
// messages, or its end.
type ShellEvent struct {
	Session uint64     `json:"session"`
	Fd      int        `json:"fd,omitempty"`
	Data    []byte     `json:"data,omitempty"`
	Acked   int        `json:"acked,omitempty"`
	Started bool       `json:"started,omitempty"`
	Exited  *ShellExit `json:"exited,omitempty"`
}

// ShellExit is how a process in the job ended: its exit code or the
// signal that killed it, or, with Refused, why it never started. Reason
// says why it was ended from outside (the job ended, was vacated).
type ShellExit struct {
	Code    int    `json:"code,omitempty"`
	Signal  int    `json:"signal,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Event is what a shadow reports to its agent on its standard output (see
// childproc).
type Event struct {
	Type EventType `json:"type"`
	// Addr and Fingerprint say where the shadow waits for the job's
	// starter and which session certificate it presents (EventReady).
	Addr        string `json:"addr,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Host names the execute machine (EventExecuting).
	Host string `json:"host,omitempty"`
	// Exit details (EventExited).
	BySignal bool    `json:"by_signal,omitempty"`
	ExitCode int     `json:"exit_code,omitempty"`
	Signal   int     `json:"signal,omitempty"`
	UserCPU  float64 `json:"user_cpu,omitempty"`
	SysCPU   float64 `json:"sys_cpu,omitempty"`
	MaxRSS   int64   `json:"max_rss,omitempty"`
	Memory   int64   `json:"memory,omitempty"`
	// A checkpoint's figures (EventCheckpointed; StoredBytes and
	// CheckpointFiles for EventSelfCheckpointed).
	CheckpointFiles int     `json:"checkpoint_files,omitempty"`
	ImageBytes      int64   `json:"image_bytes,omitempty"`
	StoredBytes     int64   `json:"stored_bytes,omitempty"`
	FrozenSeconds   float64 `json:"frozen_seconds,omitempty"`
	DumpSeconds     float64 `json:"dump_seconds,omitempty"`
	Vacate          bool    `json:"vacate,omitempty"`
	// RestoreSeconds is CRIU's restore time of a job restored from its
	// checkpoint (EventExecuting, with Restored set); RestoreFailure says
	// why a job that had a checkpoint started from the beginning instead.
	RestoreSeconds float64 `json:"restore_seconds,omitempty"`
	Restored       bool    `json:"restored,omitempty"`
	RestoreFailure string  `json:"restore_failure,omitempty"`
	// Reason explains EventHold, EventFailed, EventKilled and
	// EventCheckpointFailed.
	Reason string `json:"reason,omitempty"`
	Code   int    `json:"code,omitempty"`
	// Shell is about a process started in the job for its owner
	// (EventShell).
	Shell *ShellEvent `json:"shell,omitempty"`
	// Transfer is a file transfer's start or end (EventTransfer).
	Transfer *TransferStats `json:"transfer,omitempty"`
	// Files is what the job's remote I/O did to each submit-side file
	// during the run; it comes with the run's final event.
	Files []FileStats `json:"files,omitempty"`
}

// TransferStats is a file transfer's start, or (Finished) its end with
// what it moved: inputs to the execute machine, or (Output) outputs home,
// which are an evicted job's intermediate files if Intermediate.
type TransferStats struct {
	Output       bool    `json:"output,omitempty"`
	Intermediate bool    `json:"intermediate,omitempty"`
	Finished     bool    `json:"finished,omitempty"`
	Files        int     `json:"files,omitempty"`
	Bytes        int64   `json:"bytes,omitempty"`
	Seconds      float64 `json:"seconds,omitempty"`
}

// EventType names what happened to the job.
type EventType string

const (
	// EventReady: the shadow waits for the job's starter; the agent now
	// activates the claim. A Kill before the starter attaches ends the
	// run with EventFailed.
	EventReady EventType = "ready"
	// EventExecuting: the job's process started on the execute machine.
	EventExecuting EventType = "executing"
	// EventExited: the job ran to its end (normally or by a signal).
	EventExited EventType = "exited"
	// EventKilled: the job was stopped at the agent's request.
	EventKilled EventType = "killed"
	// EventHold: the job cannot run as submitted (missing program, ...)
	// and should be held with Reason and Code.
	EventHold EventType = "hold"
	// EventEvicted: the execute machine took the job back before it
	// finished; it should run again elsewhere.
	EventEvicted EventType = "evicted"
	// EventSuspended and EventResumed: the execute machine's owner policy
	// suspended the job, or let it run again.
	EventSuspended EventType = "suspended"
	EventResumed   EventType = "resumed"
	// EventCheckpointed: a checkpoint image of the job arrived whole and is
	// now its latest.
	EventCheckpointed EventType = "checkpointed"
	// EventSelfCheckpointed: the job exited with its checkpoint_exit_code
	// and its checkpoint files were saved (CheckpointFiles, StoredBytes);
	// its starter starts it again at once.
	EventSelfCheckpointed EventType = "self_checkpointed"
	// EventCheckpointFailed: a checkpoint could not be taken or sent home
	// (Reason); with Vacate the job was stopped without one.
	EventCheckpointFailed EventType = "checkpoint_failed"
	// EventUsage: the job's resource use so far.
	EventUsage EventType = "usage"
	// EventShell: output, an acknowledgement or the end of a process
	// started in the job for its owner (Shell).
	EventShell EventType = "shell"
	// EventTransfer: the job's input or output files began or finished
	// their transfer (Transfer).
	EventTransfer EventType = "transfer"
	// EventDisconnected: the shadow lost its starter while the job ran
	// (Reason, Host); the job runs on for its job lease while the starter
	// attaches again. EventReconnected: it did. EventReconnectFailed: the
	// lease ran out first; EventFailed follows.
	EventDisconnected    EventType = "disconnected"
	EventReconnected     EventType = "reconnected"
	EventReconnectFailed EventType = "reconnect_failed"
	// EventFailed: the run failed for reasons not the job's own (claim
	// refused, starter lost); the job should be run again.
	EventFailed EventType = "failed"
)

// check reports a spec that lacks what a shadow cannot work without.
func (s *Spec) check() error {
	if s.JobAd == "" || s.Secret == "" || len(s.CAPEM) == 0 {
		return errors.New("shadow spec: job ad, secret and pool CA are required")
	}
	return nil
}
