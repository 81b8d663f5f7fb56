package agent

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
)

func viewJobAd(t *testing.T, cluster int, log string) *classad.ClassAd {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ad := classad.New()
	ad.SetInt(AttrClusterID, int64(cluster))
	ad.SetInt(AttrProcID, 0)
	ad.SetString(AttrOwner, me.Username)
	ad.SetString(AttrUserLog, log)
	return ad
}

// TestJobEventsOfASharedLog: a job's page shows its own events only,
// from a log it shares with another job.
func TestJobEventsOfASharedLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "dag.log")
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.Local)
	for _, ev := range []joblog.Event{
		{Type: joblog.Submit, Cluster: 1, Time: at},
		{Type: joblog.Submit, Cluster: 2, Time: at},
		{Type: joblog.Execute, Cluster: 2, Time: at, Host: "h"},
		{Type: joblog.Held, Cluster: 1, Time: at, Reason: "over quota"},
	} {
		if err := joblog.Append(log, ev); err != nil {
			t.Fatal(err)
		}
	}
	events, err := (&Agent{}).JobEvents(viewJobAd(t, 1, log))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Type != joblog.Submit || events[1].Type != joblog.Held || events[1].Reason != "over quota" {
		t.Errorf("job 1's events = %+v, want its submit and hold", events)
	}
	if events, err := (&Agent{}).JobEvents(viewJobAd(t, 1, "")); err != nil || events != nil {
		t.Errorf("a job without a log: %v, %v", events, err)
	}
}

// TestJobEventsRefusesWhatIsNotALogFile: a FIFO or a symbolic link in
// the log's place is refused, without the page waiting on the FIFO.
func TestJobEventsRefusesWhatIsNotALogFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Agent{}).JobEvents(viewJobAd(t, 1, fifo)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO as the log: %v", err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Agent{}).JobEvents(viewJobAd(t, 1, link)); err == nil {
		t.Error("a symbolic link as the log was followed")
	}
}
