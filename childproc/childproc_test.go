package childproc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

type command struct {
	Job    string `json:"job,omitempty"`
	Vacate bool   `json:"vacate,omitempty"`
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	s := NewSender[command](&buf)
	want := []command{{Job: "a\nb"}, {Vacate: true}, {}}
	for _, c := range want {
		if err := s.Send(c); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReceiver[command](&buf)
	for i, w := range want {
		got, err := r.Receive()
		if err != nil || got != w {
			t.Fatalf("message %d: %+v, %v; want %+v", i, got, err, w)
		}
	}
	if _, err := r.Receive(); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

// Messages sent from several goroutines arrive whole.
func TestConcurrentSends(t *testing.T) {
	pr, pw := io.Pipe()
	s := NewSender[command](pw)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if err := s.Send(command{Job: strings.Repeat(string(rune('a'+i)), 10000)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	go func() { wg.Wait(); pw.Close() }()
	r := NewReceiver[command](pr)
	n := 0
	for {
		c, err := r.Receive()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Job) != 10000 || strings.Count(c.Job, c.Job[:1]) != 10000 {
			t.Fatalf("message %d arrived mixed with another", n)
		}
		n++
	}
	if n != 400 {
		t.Errorf("%d messages, want 400", n)
	}
}

func TestBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":   "ended\n",
		"wrong type": `{"job": 7}` + "\n",
		"truncated":  `{"job": "a`,
	} {
		_, err := NewReceiver[command](strings.NewReader(in)).Receive()
		if err == nil || err == io.EOF || !strings.Contains(err.Error(), "receive childproc.command") {
			t.Errorf("%s: %v, want an error naming the message type", name, err)
		}
	}
	long := strings.NewReader(`{"job": "` + strings.Repeat("x", MaxMessage) + `"}` + "\n")
	if _, err := NewReceiver[command](long).Receive(); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("an endless line: %v, want an error", err)
	}
	if err := NewSender[command](io.Discard).Send(command{Job: strings.Repeat("x", MaxMessage)}); err == nil {
		t.Error("sent a message over the limit")
	}
	var errc = errors.New("broken pipe")
	if err := NewSender[command](failingWriter{errc}).Send(command{}); !errors.Is(err, errc) {
		t.Errorf("send to a broken stream: %v", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func FuzzReceive(f *testing.F) {
	f.Add([]byte(`{"job":"x","vacate":true}` + "\n"))
	f.Add([]byte("ended\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReceiver[command](bytes.NewReader(in))
		for range 100 {
			if _, err := r.Receive(); err != nil {
				return
			}
		}
	})
}

func TestEnvSizesTheRuntime(t *testing.T) {
	for _, name := range []string{"GOMAXPROCS", "GOGC"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	setting := func(env []string, name string) (value string, n int) {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				value, n = v, n+1
			}
		}
		return value, n
	}
	for _, c := range []struct{ procs, want int }{{0, 1}, {1, 1}, {runtime.NumCPU() + 4, runtime.NumCPU()}} {
		env := Env(c.procs)
		if got, n := setting(env, "GOMAXPROCS"); got != strconv.Itoa(c.want) || n != 1 {
			t.Errorf("Env(%d) sets GOMAXPROCS=%s (%d times), want %d", c.procs, got, n, c.want)
		}
		if got, n := setting(env, "GOGC"); got != strconv.Itoa(ChildGOGC) || n != 1 {
			t.Errorf("Env(%d) sets GOGC=%s (%d times), want %d", c.procs, got, n, ChildGOGC)
		}
	}
	// The administrator's settings win.
	t.Setenv("GOMAXPROCS", "3")
	t.Setenv("GOGC", "50")
	env := Env(1)
	if got, n := setting(env, "GOMAXPROCS"); got != "3" || n != 1 {
		t.Errorf("Env(1) sets GOMAXPROCS=%s (%d times) with the parent's GOMAXPROCS=3", got, n)
	}
	if got, n := setting(env, "GOGC"); got != "50" || n != 1 {
		t.Errorf("Env(1) sets GOGC=%s (%d times) with the parent's GOGC=50", got, n)
	}
}
