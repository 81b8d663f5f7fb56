package jobqueue_test

import (
	"path/filepath"
	"testing"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/jobqueue/storetest"
)

// TestStore runs the store's conformance suite against the embedded log.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		dir := filepath.Join(t.TempDir(), "queue")
		return func(cfg storetest.Config) (storetest.Store, error) {
			return jobqueue.Open(dir, jobqueue.Options{MaxReservations: cfg.MaxReservations})
		}
	})
}
