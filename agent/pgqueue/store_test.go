package pgqueue

import (
	"context"
	"testing"

	"harrier.dev/harrier/agent/jobqueue/storetest"
	"harrier.dev/harrier/internal/pgtest"
)

// TestStore runs the store's conformance suite against PostgreSQL, a
// database of its own for each test.
func TestStore(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		dsn := srv.DSN(srv.NewDatabase(t))
		return func(cfg storetest.Config) (storetest.Store, error) {
			return Open(context.Background(), dsn, Options{Agent: "agent@test", MaxReservations: cfg.MaxReservations})
		}
	})
}
