package agent

import (
	"testing"

	"harrier.dev/harrier/classad"
)

func TestEndRunAccumulatesWallClock(t *testing.T) {
	ad := classad.New()
	ad.SetInt("JobStatus", Running)
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

	for _, to := range []int64{Running, Suspended} {
		c := change{}
		c.endRun(ad, to, 1012)
		if len(c) != 0 {
			t.Errorf("a move to status %d ends no run, but changed %v", to, c)
		}
	}
	ad.SetInt("JobStatus", Idle)
	c = change{}
	c.endRun(ad, Held, 1012)
	if len(c) != 0 {
		t.Errorf("an idle job has no run to end, but changed %v", c)
	}
}
