package starter_test

import (
	"bytes"
	"strings"
	"testing"

	"harrier.dev/harrier/shadow"
)

// The tests in this file start processes in a running job for its owner
// (harrier ssh-to-job) through the real shadow and starter, as the agent
// asks: the shadow's ShellCommands and ShellEvents, and the Shell stream
// between the two.

// shellEvent returns the shadow's next event about a process in the job.
func (s *session) shellEvent() *shadow.ShellEvent {
	s.t.Helper()
	for {
		ev := s.next()
		if ev.Type == shadow.EventShell {
			return ev.Shell
		}
		if ev.Type != shadow.EventUsage {
			s.t.Fatalf("shadow event %+v, want one about a process in the job", ev)
		}
	}
}

func (s *session) shell(c shadow.ShellCommand) {
	s.t.Helper()
	s.send(shadow.Command{Shell: &c})
}

// TestSessionShellWindow: input to a process in the job goes as the
// shadow acknowledges it, output comes back no faster than the agent
// acknowledges it (never more than ShellWindow messages ahead), and the
// process's exit ends its stream, with every byte through.
func TestSessionShellWindow(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)

	s.shell(shadow.ShellCommand{Session: 7, Open: &shadow.ShellOpen{Args: []string{"cat"}}})
	if ev := s.shellEvent(); ev.Session != 7 || !ev.Started {
		t.Fatalf("first event %+v, want session 7 started", ev)
	}
	// Far more than the window holds, in full chunks.
	var in bytes.Buffer
	for i := range 3 * shadow.ShellWindow {
		in.WriteString(strings.Repeat(string(rune('a'+i%26)), shadow.ShellChunk))
	}
	input := in.Bytes()
	credits, unacked := shadow.ShellWindow, 0
	var out bytes.Buffer
	sentEOF := false
	for {
		// Input whenever the window allows it.
		for credits > 0 && !sentEOF {
			credits--
			if len(input) == 0 {
				s.shell(shadow.ShellCommand{Session: 7, EOF: true})
				sentEOF = true
				break
			}
			s.shell(shadow.ShellCommand{Session: 7, Input: input[:shadow.ShellChunk]})
			input = input[shadow.ShellChunk:]
		}
		ev := s.shellEvent()
		if ev.Session != 7 {
			t.Fatalf("event for session %d", ev.Session)
		}
		switch {
		case ev.Acked > 0:
			credits += ev.Acked
		case ev.Exited != nil:
			if ev.Exited.Code != 0 || ev.Exited.Signal != 0 || ev.Exited.Refused || ev.Exited.Reason != "" {
				t.Errorf("exit %+v, want code 0", ev.Exited)
			}
			if out.Len() != in.Len() || !bytes.Equal(out.Bytes(), in.Bytes()) {
				t.Errorf("%d bytes came back of %d sent, or not the same", out.Len(), in.Len())
			}
			j.Release()
			s.expect(shadow.EventExited)
			if err := r.wait(t); err != nil {
				t.Errorf("starter: %v", err)
			}
			return
		default:
			if ev.Fd != 1 || len(ev.Data) > shadow.ShellChunk {
				t.Fatalf("output of %d bytes on fd %d", len(ev.Data), ev.Fd)
			}
			out.Write(ev.Data)
			// Acknowledged only when the window is full: the shadow
			// must wait for it.
			if unacked++; unacked > shadow.ShellWindow {
				t.Fatalf("%d output messages unacknowledged, over the window of %d", unacked, shadow.ShellWindow)
			}
			if unacked == shadow.ShellWindow {
				s.shell(shadow.ShellCommand{Session: 7, Acked: unacked})
				unacked = 0
			}
		}
	}
}

// TestSessionShellOutcomes: a process's exit code and standard error
// come back; a suspended job refuses new processes; the job's end ends
// those still running, saying why, before the job's own end is reported;
// input beyond a chunk ends the process.
func TestSessionShellOutcomes(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait\nstdout done"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)

	s.shell(shadow.ShellCommand{Session: 1, Open: &shadow.ShellOpen{Args: []string{"nosuch"}}})
	var stderr string
	ev := s.shellEvent()
	for ; ev.Exited == nil; ev = s.shellEvent() {
		if ev.Fd == 2 {
			stderr += string(ev.Data)
			s.shell(shadow.ShellCommand{Session: 1, Acked: 1})
		}
	}
	if ev.Exited.Code != 127 || stderr != "nosuch: not found\n" {
		t.Errorf("exit %+v with standard error %q, want 127 and the error", ev.Exited, stderr)
	}

	s.shell(shadow.ShellCommand{Session: 2, Open: &shadow.ShellOpen{Args: []string{"wait"}}})
	if ev := s.shellEvent(); !ev.Started {
		t.Fatalf("event %+v, want started", ev)
	}
	s.shell(shadow.ShellCommand{Session: 2, Input: make([]byte, shadow.ShellChunk+1)})
	if ev := s.shellEvent(); ev.Session != 2 || ev.Exited == nil || !strings.Contains(ev.Exited.Reason, "over") {
		t.Errorf("after an oversized input: %+v, want the process ended", ev)
	}

	r.Suspend()
	s.expect(shadow.EventSuspended)
	s.shell(shadow.ShellCommand{Session: 3, Open: &shadow.ShellOpen{Args: []string{"echo", "hi"}}})
	if ev := s.shellEvent(); ev.Session != 3 || ev.Exited == nil || !ev.Exited.Refused || !strings.Contains(ev.Exited.Reason, "suspended") {
		t.Errorf("open in a suspended job: %+v, want refused as suspended", ev)
	}
	r.Continue()
	s.expect(shadow.EventResumed)

	s.shell(shadow.ShellCommand{Session: 4, Open: &shadow.ShellOpen{Args: []string{"wait"}}})
	if ev := s.shellEvent(); !ev.Started {
		t.Fatalf("event %+v, want started", ev)
	}
	j.Release()
	if ev := s.shellEvent(); ev.Session != 4 || ev.Exited == nil || ev.Exited.Reason != "the job exited" {
		t.Errorf("at the job's end: %+v, want the process ended as the job exited", ev)
	}
	s.expect(shadow.EventExited)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	s.shell(shadow.ShellCommand{Session: 5, Open: &shadow.ShellOpen{Args: []string{"echo"}}})
	if ev := s.shellEvent(); ev.Session != 5 || ev.Exited == nil || !ev.Exited.Refused {
		t.Errorf("open after the job's end: %+v, want refused", ev)
	}
}
