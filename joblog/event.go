// Package joblog writes and reads HTCondor's job event log (the "user log"
// named by a submit file's log command), in HTCondor's own text format, so
// that its users' tools can read Harrier's logs:
//
//	005 (001.000.000) 2026-11-22 10:00:03 Job terminated.
//		(1) Normal termination (return value 0)
//	...
//
// Each event is appended with one write(2) on an O_APPEND descriptor and
// then fsynced: an event, once written, is whole and on disk, and several
// writers (the agent and its shadows) never interleave within an event.
package joblog

import (
	"fmt"
	"strings"
	"time"
)

// Type is an event's number, as HTCondor numbers them.
type Type int

const (
	Submit          Type = 0
	Execute         Type = 1
	ExecutableError Type = 2
	Checkpointed    Type = 3
	Evicted         Type = 4
	Terminated      Type = 5
	ImageSize       Type = 6
	ShadowException Type = 7
	Aborted         Type = 9
	Suspended       Type = 10
	Unsuspended     Type = 11
	Held            Type = 12
	Released        Type = 13
	// JobDisconnected, JobReconnected and JobReconnectFailed follow a
	// job whose shadow and starter lost each other while it ran on, within
	// its job lease (Host, and Reason for the first and last).
	JobDisconnected    Type = 22
	JobReconnected     Type = 23
	JobReconnectFailed Type = 24
	// PostScriptTerminated is written by DAGMan when a node's POST script
	// exits (Normal, ReturnValue, Signal, DAGNode).
	PostScriptTerminated Type = 16
	// JobAdInformation records selected job attributes (Ad).
	JobAdInformation Type = 28
	// PreSkip is written by DAGMan when a node's PRE script exits with its
	// PRE_SKIP value, so the node's job and POST script are skipped
	// (DAGNode).
	PreSkip Type = 35
	// FileTransfer is the start or end of a job's input or output
	// transfer (Transfer).
	FileTransfer Type = 40
)

// Kinds of ExecutableError, HTCondor's numbers.
const (
	NotExecutable = 0 // "(0) Job file not executable."
	BadLink       = 1 // "(1) Job not properly linked for Condor."
)

// Event is one entry of a job event log. Which fields matter depends on
// Type; the others are ignored when writing and zero when read.
type Event struct {
	Type    Type
	Cluster int
	Proc    int
	Time    time.Time

	// Host is the submit host (Submit) or execute host (Execute).
	Host string
	// Reason explains Aborted, Held, Released, Evicted, ShadowException
	// and ExecutableError; on Execute it says whether a job that had a
	// checkpoint was restored from it.
	Reason string
	// Code and Subcode are a hold's HoldReasonCode and HoldReasonSubCode.
	Code, Subcode int

	// Normal, ReturnValue and Signal describe a Terminated job: it exited
	// with ReturnValue, or (not Normal) was killed by Signal.
	Normal      bool
	ReturnValue int
	Signal      int
	// UserCPU and SysCPU are the run's remote CPU seconds (Terminated,
	// Evicted, Checkpointed).
	UserCPU, SysCPU float64
	// BytesSent and BytesReceived count the run's I/O with the submit
	// side: bytes the job wrote and read (Terminated, Evicted);
	// TotalBytesSent and TotalBytesReceived count those of all its runs
	// (Terminated).
	BytesSent, BytesReceived           int64
	TotalBytesSent, TotalBytesReceived int64
	// Files summarises the run's remote I/O, one line per submit-side
	// file (Terminated, Evicted). It is a string rather than a slice so
	// that Events stay comparable.
	Files string

	// ImageSizeKB, MemoryUsageMB and ResidentSetSizeKB (ImageSize).
	ImageSizeKB, MemoryUsageMB, ResidentSetSizeKB int64
	// Checkpointed reports whether an Evicted job left a checkpoint.
	WasCheckpointed bool
	// ErrorKind is NotExecutable or BadLink (ExecutableError).
	ErrorKind int
	// Transfer describes a FileTransfer event.
	Transfer TransferInfo
	// Ad holds a JobAdInformation event's attributes, one "Name = value"
	// line each (value is ClassAd expression text). It is a string rather
	// than a map so that Events stay comparable.
	Ad string

	// DAGNode names the DAG node the event belongs to (Submit,
	// PostScriptTerminated, PreSkip): HTCondor's "DAG Node: NAME" note,
	// which DAGMan's recovery reads.
	DAGNode string
	// Notes are the submitter's notes on a Submit event
	// (submit_event_notes), one line.
	Notes string
}

// TransferInfo is which transfer a FileTransfer event is about, and, at
// its end, what it moved.
type TransferInfo struct {
	Output   bool // the job's outputs, else its inputs
	Finished bool // its end, else its start
	Files    int
	Bytes    int64
}

// timeLayout is HTCondor's ISO date form of event times.
const timeLayout = "2006-01-02 15:04:05"

// Format renders the event in HTCondor's format, ending with the "...\n"
// terminator line.
func (e Event) Format() string {
	var b strings.Builder
	t := e.Time
	if t.IsZero() {
		t = time.Now()
	}
	fmt.Fprintf(&b, "%03d (%03d.%03d.000) %s ", int(e.Type), e.Cluster, e.Proc, t.Format(timeLayout))
	switch e.Type {
	case Submit:
		fmt.Fprintf(&b, "Job submitted from host: <%s>\n", e.Host)
		writeDAGNode(&b, e.DAGNode)
		if notes := strings.TrimSpace(strings.ReplaceAll(e.Notes, "\n", " ")); notes != "" {
			fmt.Fprintf(&b, "    %s\n", notes)
		}
	case Execute:
		fmt.Fprintf(&b, "Job executing on host: <%s>\n", e.Host)
		writeReason(&b, e.Reason)
	case ExecutableError:
		switch e.ErrorKind {
		case NotExecutable:
			b.WriteString("(0) Job file not executable.\n")
		case BadLink:
			b.WriteString("(1) Job not properly linked for Condor.\n")
		default:
			fmt.Fprintf(&b, "(%d) [Bad Executable Error Event].\n", e.ErrorKind)
		}
		writeReason(&b, e.Reason)
	case Checkpointed:
		b.WriteString("Job was checkpointed.\n")
		writeUsage(&b, e, "Run Remote Usage")
		b.WriteString("\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n")
	case Evicted:
		b.WriteString("Job was evicted.\n")
		if e.WasCheckpointed {
			b.WriteString("\t(1) Job was checkpointed.\n")
		} else {
			b.WriteString("\t(0) Job was not checkpointed.\n")
		}
		writeUsage(&b, e, "Run Remote Usage")
		b.WriteString("\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n")
		fmt.Fprintf(&b, "\t%d  -  Run Bytes Sent By Job\n\t%d  -  Run Bytes Received By Job\n", e.BytesSent, e.BytesReceived)
		writeFiles(&b, e.Files)
		writeReason(&b, e.Reason)
	case Terminated:
		b.WriteString("Job terminated.\n")
		if e.Normal {
			fmt.Fprintf(&b, "\t(1) Normal termination (return value %d)\n", e.ReturnValue)
		} else {
			fmt.Fprintf(&b, "\t(0) Abnormal termination (signal %d)\n\t(0) No core file\n", e.Signal)
		}
		writeUsage(&b, e, "Run Remote Usage")
		b.WriteString("\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n")
		writeUsage(&b, e, "Total Remote Usage")
		b.WriteString("\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n")
		fmt.Fprintf(&b, "\t%d  -  Run Bytes Sent By Job\n\t%d  -  Run Bytes Received By Job\n", e.BytesSent, e.BytesReceived)
		fmt.Fprintf(&b, "\t%d  -  Total Bytes Sent By Job\n\t%d  -  Total Bytes Received By Job\n", e.TotalBytesSent, e.TotalBytesReceived)
		writeFiles(&b, e.Files)
	case ImageSize:
		fmt.Fprintf(&b, "Image size of job updated: %d\n", e.ImageSizeKB)
		fmt.Fprintf(&b, "\t%d  -  MemoryUsage of job (MB)\n\t%d  -  ResidentSetSize of job (KB)\n", e.MemoryUsageMB, e.ResidentSetSizeKB)
	case ShadowException:
		b.WriteString("Shadow exception!\n")
		writeReason(&b, e.Reason)
	case Aborted:
		b.WriteString("Job was aborted.\n")
		writeReason(&b, e.Reason)
	case Suspended:
		b.WriteString("Job was suspended.\n\tNumber of processes actually suspended: 1\n")
	case Unsuspended:
		b.WriteString("Job was unsuspended.\n")
	case Held:
		b.WriteString("Job was held.\n")
		writeReason(&b, e.Reason)
		fmt.Fprintf(&b, "\tCode %d Subcode %d\n", e.Code, e.Subcode)
	case Released:
		b.WriteString("Job was released.\n")
		writeReason(&b, e.Reason)
	case JobDisconnected:
		b.WriteString("Job disconnected, attempting to reconnect\n")
		writeReason(&b, e.Reason)
		fmt.Fprintf(&b, "\tTrying to reconnect to %s\n", e.Host)
	case JobReconnected:
		fmt.Fprintf(&b, "Job reconnected to %s\n", e.Host)
	case JobReconnectFailed:
		b.WriteString("Job reconnection failed\n")
		writeReason(&b, e.Reason)
		fmt.Fprintf(&b, "\tCan not reconnect to %s, rescheduling job\n", e.Host)
	case PostScriptTerminated:
		b.WriteString("POST Script terminated.\n")
		if e.Normal {
			fmt.Fprintf(&b, "\t(1) Normal termination (return value %d)\n", e.ReturnValue)
		} else {
			fmt.Fprintf(&b, "\t(0) Abnormal termination (signal %d)\n", e.Signal)
		}
		writeDAGNode(&b, e.DAGNode)
	case PreSkip:
		b.WriteString("PRE script return value is PRE_SKIP value\n")
		writeDAGNode(&b, e.DAGNode)
	case FileTransfer:
		what := "input"
		if e.Transfer.Output {
			what = "output"
		}
		if !e.Transfer.Finished {
			fmt.Fprintf(&b, "Started transferring %s files\n", what)
			break
		}
		fmt.Fprintf(&b, "Finished transferring %s files\n", what)
		fmt.Fprintf(&b, "\t%d  -  %s\n\t%d  -  %s\n", e.Transfer.Bytes, bytesTransferred, e.Transfer.Files, filesTransferred)
	case JobAdInformation:
		b.WriteString("Job ad information event triggered.\n")
		for line := range strings.Lines(e.Ad) {
			// Attribute lines are not indented; a lone "..." would end
			// the event early, so it is dropped like a blank line.
			if line = strings.TrimSpace(line); line != "" && line != "..." {
				b.WriteString(line)
				b.WriteByte('\n')
			}
		}
	default:
		fmt.Fprintf(&b, "Event %d\n", int(e.Type))
	}
	b.WriteString("...\n")
	return b.String()
}

// dagNodeLabel introduces the node name in the events of a DAG's nodes.
const dagNodeLabel = "DAG Node: "

// writeDAGNode writes the node's note, indented as HTCondor indents its
// submit event notes.
func writeDAGNode(b *strings.Builder, node string) {
	if node = strings.TrimSpace(strings.ReplaceAll(node, "\n", " ")); node != "" {
		fmt.Fprintf(b, "    %s%s\n", dagNodeLabel, node)
	}
}

func writeReason(b *strings.Builder, reason string) {
	if reason == "" {
		return
	}
	// A reason is one line in the log.
	reason = strings.ReplaceAll(strings.ReplaceAll(reason, "\r", " "), "\n", " ")
	fmt.Fprintf(b, "\t%s\n", reason)
}

// Labels of a finished transfer's figures.
const (
	bytesTransferred = "Bytes Transferred"
	filesTransferred = "Files Transferred"
)

// filesLabel introduces the per-file summary of a run's remote I/O.
const filesLabel = "Run Remote I/O Files"

// writeFiles writes the per-file summary: a count line, then one line per
// file, indented twice as the usage lines are.
func writeFiles(b *strings.Builder, files string) {
	if files == "" {
		return
	}
	var lines []string
	for l := range strings.Lines(files) {
		if l = strings.TrimRight(l, "\r\n"); l != "" && l != "..." {
			lines = append(lines, l)
		}
	}
	fmt.Fprintf(b, "\t%d  -  %s\n", len(lines), filesLabel)
	for _, l := range lines {
		fmt.Fprintf(b, "\t\t%s\n", l)
	}
}

func writeUsage(b *strings.Builder, e Event, label string) {
	fmt.Fprintf(b, "\t\tUsr %s, Sys %s  -  %s\n", cpuTime(e.UserCPU), cpuTime(e.SysCPU), label)
}

// cpuTime prints seconds as HTCondor does: "D HH:MM:SS".
func cpuTime(secs float64) string {
	s := int64(secs + 0.5)
	return fmt.Sprintf("%d %02d:%02d:%02d", s/86400, s%86400/3600, s%3600/60, s%60)
}
