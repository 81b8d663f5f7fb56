package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// runTail shows the end of a running job's output, as condor_tail does:
//
//	harrier tail [-follow] [-maxbytes N] [-stderr] [-no-stdout] ID [FILE...]
//
// The shadow writes a job's standard output and error, and the files it
// writes through the shadow, on the submit side as the job runs, so the
// tool reads them there, with the caller's own permissions. A FILE is
// relative to the job's initial directory; a file the job keeps in its
// scratch directory on the execute machine cannot be shown.
func runTail(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("tail")
	follow := tf.fs.Bool("follow", false, "go on printing what the job writes, until it stops running")
	tf.fs.BoolVar(follow, "f", false, "same as -follow")
	maxBytes := tf.fs.Int64("maxbytes", 1024, "print at most this many bytes of the end of each file")
	stderr := tf.fs.Bool("stderr", false, "show the job's standard error")
	noStdout := tf.fs.Bool("no-stdout", false, "do not show the job's standard output")
	tf.refuse("refused: "+localAgent, "name=")
	tf.refuse("not yet", "auto-retry")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	if tf.fs.NArg() < 1 {
		return usagef("want a job id (cluster.proc)")
	}
	id := tf.fs.Arg(0)
	if ids, _ := splitIDs([]string{id}); len(ids) == 0 {
		return usagef("bad job id %q: want cluster.proc", id)
	}
	ad, err := runningJob(client, id)
	if err != nil {
		return err
	}
	iwd, _ := ad.EvalString("Iwd")
	var paths []string
	for _, f := range []struct {
		attr, what string
		want       bool
	}{{"Out", "output", !*noStdout}, {"Err", "error", *stderr}} {
		p, _ := ad.EvalString(f.attr)
		if !f.want {
			continue
		}
		if p == "" || p == os.DevNull {
			return fmt.Errorf("job %s has no %s file (its %s is %s)", id, f.what, f.attr, os.DevNull)
		}
		paths = append(paths, p)
	}
	paths = append(paths, tf.fs.Args()[1:]...)
	if len(paths) == 0 {
		return usagef("nothing to show: -no-stdout and no -stderr or FILE")
	}
	offsets := make([]int64, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(iwd, p)
		}
		paths[i] = p
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("job %s: %w (only files the job writes through the shadow are on this side)", id, err)
		}
		offsets[i] = max(0, fi.Size()-*maxBytes)
	}
	show := func() error {
		for i, p := range paths {
			n, err := copyFrom(stdout, p, offsets[i], len(paths) > 1)
			if err != nil {
				return err
			}
			offsets[i] += n
		}
		return nil
	}
	if err := show(); err != nil || !*follow {
		return err
	}
	for {
		time.Sleep(200 * time.Millisecond)
		_, err := runningJob(client, id)
		// What the job wrote before it stopped is shown, then tail ends.
		if serr := show(); serr != nil {
			return serr
		}
		if err != nil {
			return nil
		}
	}
}

// copyFrom copies path from offset to w, with a header naming it when
// several files are shown, and returns how many bytes it copied.
func copyFrom(w io.Writer, path string, offset int64, header bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	b, err := io.ReadAll(f)
	if err != nil || len(b) == 0 {
		return 0, err
	}
	if header {
		fmt.Fprintf(w, "==> %s <==\n", path)
	}
	_, err = w.Write(b)
	return int64(len(b)), err
}

// runningJob returns the ad of a running job.
func runningJob(client wire.ScheddClient, id string) (*classad.ClassAd, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := client.Query(ctx, &wire.JobQueryRequest{Ids: []string{id}})
	if err != nil {
		return nil, rpcError("tail", err)
	}
	var text string
	if err := receive(stream, func(t string) error { text = t; return nil }); err != nil {
		return nil, rpcError("tail", err)
	}
	if text == "" {
		return nil, fmt.Errorf("job %s is not in the queue", id)
	}
	ad, err := classad.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("bad ad from the pool: %w", err)
	}
	if st, _ := ad.EvalInt("JobStatus"); st != 2 {
		return nil, fmt.Errorf("job %s is not running (its status is %s)", id, statusLetter(st))
	}
	return ad, nil
}
