package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"harrier.dev/harrier/joblog"
)

// waitLog waits, as condor_wait does, until the jobs of a job event log
// have ended (terminated or aborted): all of them, those of one cluster or
// one job (sel), or any num of them. It reads only what the log gains
// between looks, so a long log costs one reading.
type waitLog struct {
	path   string
	sel    string // "", "C" or "C.P"
	num    int    // 0: all the selected jobs
	echo   bool   // print each event
	status bool   // print each job's start and end
	out    io.Writer
}

// jobKey names a job in a log, as condor_wait prints it.
func jobKey(e joblog.Event) string { return fmt.Sprintf("%d.%d.0", e.Cluster, e.Proc) }

func (w *waitLog) selects(e joblog.Event) bool {
	switch w.sel {
	case "":
		return true
	case fmt.Sprint(e.Cluster):
		return true
	}
	return w.sel == fmt.Sprintf("%d.%d", e.Cluster, e.Proc)
}

// run waits until ctx ends (a timeout) or the jobs have ended.
func (w *waitLog) run(ctx context.Context) error {
	f, err := os.Open(w.path)
	if err != nil {
		return fmt.Errorf("open the job event log: %w", err)
	}
	defer f.Close()
	submitted := map[string]bool{}
	ended := map[string]bool{}
	var pending []byte
	first := true
	for {
		chunk, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", w.path, err)
		}
		pending = append(pending, chunk...)
		// Parse only whole events: a writer may be half-way through one.
		if end := bytes.LastIndex(pending, []byte("\n...\n")); end >= 0 {
			events, err := joblog.Read(bytes.NewReader(pending[:end+5]))
			if err != nil {
				return fmt.Errorf("%s: %w", w.path, err)
			}
			pending = pending[end+5:]
			for _, e := range events {
				if !w.selects(e) {
					continue
				}
				if w.echo {
					io.WriteString(w.out, e.Format())
				}
				k := jobKey(e)
				switch e.Type {
				case joblog.Submit:
					submitted[k] = true
					w.say("%s submitted\n", k)
				case joblog.Execute:
					w.say("%s executing on host %s\n", k, e.Host)
				case joblog.Terminated:
					w.end(ended, k, "completed")
				case joblog.Aborted:
					w.end(ended, k, "removed")
				}
			}
		}
		if first && len(submitted) == 0 {
			if w.sel != "" {
				return fmt.Errorf("no job %s in %s", w.sel, w.path)
			}
			return fmt.Errorf("no job in %s", w.path)
		}
		first = false
		done := len(ended) >= len(submitted)
		if w.num > 0 {
			done = len(ended) >= w.num
		}
		if done {
			if w.sel == "" && w.num == 0 {
				fmt.Fprintln(w.out, "All jobs done.")
			} else {
				fmt.Fprintln(w.out, "Specified job(s) done.")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				fmt.Fprintln(w.out, "Time expired.")
				return exitError(1)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// end records that job k ended, once.
func (w *waitLog) end(ended map[string]bool, k, how string) {
	if !ended[k] {
		ended[k] = true
		w.say("%s %s.\n", k, how)
	}
}

func (w *waitLog) say(format string, args ...any) {
	if w.status {
		fmt.Fprintf(w.out, format, args...)
	}
}
