package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// freezeTimeout bounds how long a suspend waits for the job's processes
// to stop.
const freezeTimeout = 5 * time.Second

// freezeV1 freezes the cgroup v1 freezer group dir, waiting up to timeout
// for every task in it to stop.
//
// libcontainer's own freeze gives up after about 200 ms, thawing the
// group every fifty tries, and the kernel stops a task only when that
// task next runs: on a loaded machine a busy job's process may not run
// within any of those tries, and the job was not suspended ("unable to
// freeze"). Here the group stays FREEZING until it is FROZEN; FROZEN is
// written again at each look, which catches processes forked meanwhile.
// A group that does not freeze in time is thawed. libcontainer reads the
// group's state when it next acts, so it sees the job paused.
func freezeV1(dir string, timeout time.Duration) error {
	state := filepath.Join(dir, "freezer.state")
	thaw := func() { _ = os.WriteFile(state, []byte("THAWED"), 0) }
	deadline := time.Now().Add(timeout)
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 10*time.Millisecond) {
		if err := os.WriteFile(state, []byte("FROZEN"), 0); err != nil {
			thaw()
			return fmt.Errorf("freeze: %w", err)
		}
		b, err := os.ReadFile(state)
		if err != nil {
			thaw()
			return fmt.Errorf("freeze: %w", err)
		}
		switch s := strings.TrimSpace(string(b)); s {
		case "FROZEN":
			return nil
		case "FREEZING":
		default:
			thaw()
			return fmt.Errorf("freeze: the group is %s", s)
		}
		if time.Now().After(deadline) {
			thaw()
			return errors.New("unable to freeze: a process of the job did not stop within " + timeout.String())
		}
		time.Sleep(delay)
	}
}
