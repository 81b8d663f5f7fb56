package main

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://harrier:s3cret@db.example.org:5432/queue", "postgres://harrier:xxxxx@db.example.org:5432/queue"},
		{"postgresql://db/queue?user=harrier&password=s3cret&sslmode=require", "postgresql://db/queue?password=xxxxx&sslmode=require&user=harrier"},
		{"postgres:///queue?host=/run/postgresql", "postgres:///queue?host=/run/postgresql"},
		{"host=db user=harrier password=s3cret dbname=queue", "host=db user=harrier password=xxxxx dbname=queue"},
		{"host=db password = 's3 cr\\'et' dbname=queue", "host=db password = xxxxx dbname=queue"},
		{"host=/tmp dbname=queue", "host=/tmp dbname=queue"},
	} {
		if got := redactDSN(tc.in); got != tc.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(redactDSN(tc.in), "s3") {
			t.Errorf("redactDSN(%q) shows the password", tc.in)
		}
	}
}

func TestQueueStoreConf(t *testing.T) {
	for _, store := range []string{"", "embedded"} {
		if conf, err := queueStoreConf(store); err != nil || conf != "" {
			t.Errorf("--store %q: %q, %v; want the default", store, conf, err)
		}
	}
	conf, err := queueStoreConf("postgres:///queue?host=/run/postgresql")
	if err != nil || !strings.Contains(conf, "QUEUE_STORE = postgres\nQUEUE_DSN = postgres:///queue?host=/run/postgresql\n") {
		t.Errorf("--store postgres://: %q, %v", conf, err)
	}
	for _, bad := range []string{"mysql://db/queue", "postgres://harrier:s3cret@db/queue", "postgres://db:notaport/queue"} {
		if _, err := queueStoreConf(bad); err == nil {
			t.Errorf("--store %q accepted", bad)
		}
	}
}
