package dagman

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(fakeJobEnv); s != "" {
		os.Exit(runFakeJob(s))
	}
	if s := os.Getenv(runDAGEnv); s != "" {
		os.Exit(runDAGChild(s))
	}
	if s := os.Getenv(holdLockEnv); s != "" {
		os.Exit(holdLock(s))
	}
	os.Exit(m.Run())
}
