package agent

import (
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

func TestEndRunAccumulatesWallClock(t *testing.T) {
	ad := classad.New()
	ad.SetValue(AttrJobStatus, Running.value())
	ad.SetInt("JobCurrentStartDate", 1000)
	ad.SetValue("RemoteWallClockTime", classad.Real(30))

	c := change{}
	c.endRun(ad, Idle, 1012)
	if v, _ := c["RemoteWallClockTime"].RealValue(); v != 42 {
		t.Errorf("RemoteWallClockTime after a 12 s run = %v, want 42", c["RemoteWallClockTime"])
	}
	if v, _ := c["LastRemoteWallClockTime"].RealValue(); v != 12 {
		t.Errorf("LastRemoteWallClockTime = %v, want 12", c["LastRemoteWallClockTime"])
	}

	for _, to := range []JobStatus{Running, Suspended} {
		c := change{}
		c.endRun(ad, to, 1012)
		if len(c) != 0 {
			t.Errorf("a move to %s ends no run, but changed %v", to, c)
		}
	}
	ad.SetValue(AttrJobStatus, Idle.value())
	c = change{}
	c.endRun(ad, Held, 1012)
	if len(c) != 0 {
		t.Errorf("an idle job has no run to end, but changed %v", c)
	}
}

func TestStartBackoff(t *testing.T) {
	ad := classad.New()
	ad.SetValue(AttrJobStatus, Idle.value())
	now := time.Unix(10_000, 0)
	if d := startBackoff(ad); d != 0 || waiting(ad, now) {
		t.Errorf("a job that never failed to start waits %v", d)
	}
	ad.SetInt("LastShadowExceptionDate", now.Unix())
	for n, want := range map[int64]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 7: time.Minute, 40: time.Minute} {
		ad.SetInt("NumShadowExceptions", n)
		if d := startBackoff(ad); d != want {
			t.Errorf("after %d failed starts: back-off %v, want %v", n, d, want)
		}
	}
	ad.SetInt("NumShadowExceptions", 3) // 4 s
	if !waiting(ad, now.Add(3*time.Second)) || waiting(ad, now.Add(4*time.Second)) {
		t.Errorf("a job 4 s into its back-off: waiting at 3 s %v, at 4 s %v", waiting(ad, now.Add(3*time.Second)), waiting(ad, now.Add(4*time.Second)))
	}
	ad.SetInt("JobCurrentStartDate", now.Unix()+1)
	if waiting(ad, now.Add(time.Second)) {
		t.Error("a job that has started since its last failed start still waits")
	}
}

func TestJobStatusString(t *testing.T) {
	for st, want := range map[JobStatus]string{Idle: "Idle", Held: "Held", TransferringOutput: "TransferringOutput", Suspended: "Suspended", 9: "JobStatus(9)"} {
		if got := st.String(); got != want {
			t.Errorf("JobStatus %d is %q, want %q", int(st), got, want)
		}
	}
}
