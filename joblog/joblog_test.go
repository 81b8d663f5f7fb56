package joblog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var when = time.Date(2026, 11, 22, 10, 0, 3, 0, time.Local)

func TestFormatTerminated(t *testing.T) {
	got := Event{Type: Terminated, Cluster: 1, Proc: 0, Time: when, Normal: true, ReturnValue: 0, UserCPU: 61}.Format()
	want := "005 (001.000.000) 2026-11-22 10:00:03 Job terminated.\n" +
		"\t(1) Normal termination (return value 0)\n" +
		"\t\tUsr 0 00:01:01, Sys 0 00:00:00  -  Run Remote Usage\n" +
		"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
		"\t\tUsr 0 00:01:01, Sys 0 00:00:00  -  Total Remote Usage\n" +
		"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n" +
		"\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n" +
		"\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n" +
		"...\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	events := []Event{
		{Type: Submit, Cluster: 12, Proc: 3, Time: when, Host: "10.0.0.1:9618"},
		{Type: Execute, Cluster: 12, Proc: 3, Time: when, Host: "10.0.0.2:9618"},
		{Type: Execute, Cluster: 12, Proc: 3, Time: when, Host: "10.0.0.3:9618", Reason: "Not restored from its checkpoint (image is corrupt): started from the beginning"},
		{Type: Held, Cluster: 12, Proc: 3, Time: when, Reason: "via harrier hold (by user ann)", Code: 1, Subcode: 7},
		{Type: Released, Cluster: 12, Proc: 3, Time: when, Reason: "via harrier release"},
		{Type: JobDisconnected, Cluster: 12, Proc: 3, Time: when, Host: "slot1@exec1", Reason: "Socket between submit and execute hosts closed unexpectedly"},
		{Type: JobReconnected, Cluster: 12, Proc: 3, Time: when, Host: "slot1@exec1"},
		{Type: JobReconnectFailed, Cluster: 12, Proc: 3, Time: when, Host: "slot1@exec1", Reason: "Job lease expired"},
		{Type: Evicted, Cluster: 12, Proc: 3, Time: when, Reason: "owner came back", WasCheckpointed: true},
		{Type: Terminated, Cluster: 12, Proc: 3, Time: when, Normal: true, ReturnValue: 42},
		{Type: Terminated, Cluster: 12, Proc: 4, Time: when, Signal: 9},
		{Type: Aborted, Cluster: 1234, Proc: 56, Time: when, Reason: "via harrier rm"},
		{Type: Submit, Cluster: 13, Time: when, Host: "10.0.0.1:9618", DAGNode: "splice+B"},
		{Type: Submit, Cluster: 14, Time: when, Host: "10.0.0.1:9618", DAGNode: "E", Notes: "nightly run, input v3"},
		{Type: Submit, Cluster: 15, Time: when, Host: "10.0.0.1:9618", Notes: "no node"},
		{Type: PostScriptTerminated, Cluster: 13, Time: when, Normal: true, ReturnValue: 3, DAGNode: "splice+B"},
		{Type: PostScriptTerminated, Cluster: 13, Time: when, Signal: 15, DAGNode: "C"},
		{Type: PreSkip, Time: when, DAGNode: "D"},
		{Type: FileTransfer, Cluster: 12, Proc: 3, Time: when},
		{Type: FileTransfer, Cluster: 12, Proc: 3, Time: when, Transfer: TransferInfo{Finished: true, Files: 3, Bytes: 12345}},
		{Type: FileTransfer, Cluster: 12, Proc: 3, Time: when, Transfer: TransferInfo{Output: true}},
		{Type: FileTransfer, Cluster: 12, Proc: 3, Time: when, Transfer: TransferInfo{Output: true, Finished: true, Files: 1, Bytes: 7}},
	}
	path := filepath.Join(t.TempDir(), "job.log")
	for _, e := range events {
		if err := Append(path, e); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(events) {
		t.Fatalf("read %d events, wrote %d", len(got), len(events))
	}
	for i := range events {
		want := events[i]
		if got[i] != want {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
	// Parse reads the same text to the same events.
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(text)
	if err != nil || !slices.Equal(parsed, got) {
		t.Errorf("Parse = %+v, %v; want what Read read", parsed, err)
	}
}

func TestReadIgnoresUnfinishedEventAndReportsGarbage(t *testing.T) {
	full := Event{Type: Execute, Cluster: 1, Time: when, Host: "h:1"}.Format()
	partial := strings.TrimSuffix(Event{Type: Submit, Cluster: 2, Time: when, Host: "h:1"}.Format(), "...\n")
	got, err := Read(strings.NewReader(full + partial))
	if err != nil || len(got) != 1 {
		t.Errorf("Read = %v, %v; want the one finished event", got, err)
	}
	if _, err := Read(strings.NewReader(full + "garbage line\n...\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("garbage: err = %v, want one naming line 3", err)
	}
	if got, err := Parse([]byte(full + partial)); err != nil || len(got) != 1 {
		t.Errorf("Parse = %v, %v; want the one finished event", got, err)
	}
	if _, err := Parse([]byte(full + "garbage line\r\n...\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("Parse of garbage: err = %v, want one naming line 3", err)
	}
}

func TestConcurrentWritersDoNotInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := AppendNoSync(path, Event{Type: Terminated, Cluster: w, Proc: i, Time: when, Normal: true}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	f, _ := os.Open(path)
	defer f.Close()
	got, err := Read(f)
	if err != nil || len(got) != 160 {
		t.Fatalf("read %d events, err %v; want 160", len(got), err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(Event{Type: Held, Cluster: 1, Time: when, Reason: "r", Code: 1}.Format())
	f.Add(Event{Type: Terminated, Cluster: 1, Time: when, Signal: 9}.Format())
	f.Add("000 (1.2.3) 2026-11-22 10:00:00 x\n...\n")
	f.Add("006 (1.0.0) 11/22 10:00:00 Image size of job updated: 9\n\t3  -  MemoryUsage of job (MB)\n...\n")
	f.Add("028 (1.0.0) 2026-11-22 10:00:00 Job ad information event triggered.\nA = 1\n...\n")
	f.Fuzz(func(t *testing.T, s string) {
		events, _ := Read(strings.NewReader(s))
		// Whatever was read is written back in a form that reads back
		// to the same text.
		for _, e := range events {
			text := e.Format()
			again, err := Read(strings.NewReader(text))
			if err != nil || len(again) != 1 {
				t.Fatalf("re-read of %q: %v, %d events", text, err, len(again))
			}
			if text2 := again[0].Format(); text2 != text {
				t.Fatalf("format not stable:\n%q\n%q", text, text2)
			}
		}
	})
}
