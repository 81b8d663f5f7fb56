package main

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/wire"
)

// A daemon describes a setting that waits for its restart as it started
// with it, with the file's new value beside it; restartKeys names only
// the keys asked about whose values changed since the start.
func TestRunningConfigWaitingForRestart(t *testing.T) {
	load := func(src string) *poolConfig {
		c, err := config.Parse(strings.NewReader(src), "pool.conf", nil)
		if err != nil {
			t.Fatal(err)
		}
		return &poolConfig{c: c}
	}
	started := load("MAX_SUBMISSION_BYTES = 1000\nMAX_JOBS_PER_OWNER = 5\n")
	next := load("MAX_SUBMISSION_BYTES = 2000\nMAX_JOBS_PER_OWNER = 1\n")
	if got := restartKeys(started, next, "MAX_SUBMISSION_BYTES", "LOG_LEVEL"); !slices.Equal(got, []string{"MAX_SUBMISSION_BYTES"}) {
		t.Errorf("restartKeys: %v", got)
	}
	var running atomic.Pointer[runningConfig]
	running.Store(&runningConfig{pc: next, started: started, restart: []string{"MAX_SUBMISSION_BYTES"}})
	e := &daemonAdminEndpoint{running: &running}
	reply, err := e.Config(t.Context(), &wire.ConfigRequest{Keys: []string{"max_submission_bytes", "MAX_JOBS_PER_OWNER"}})
	if err != nil {
		t.Fatal(err)
	}
	waiting, live := reply.Settings[0], reply.Settings[1]
	if waiting.Value != "1000" || waiting.Next == nil || waiting.Next.Value != "2000" || waiting.Next.Origin != "pool.conf:1" {
		t.Errorf("a setting waiting for a restart: %v", waiting)
	}
	if live.Value != "1" || live.Next != nil {
		t.Errorf("a setting applied: %v", live)
	}
}
