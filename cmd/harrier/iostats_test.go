package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"harrier.dev/harrier/joblog"
)

// TestRemoteIOStatistics runs a job whose I/O through iofs is known and
// checks the shadow's figures in the job ad (HTCondor's FileReadBytes and
// friends, the per-file RemoteIOFiles) and in the terminated event.
func TestRemoteIOStatistics(t *testing.T) {
	p := startContainerPool(t)
	dir := filepath.Join(t.TempDir(), "job")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777) // the job runs as nobody and creates files here
	const size = 50000       // over the 4 KiB a lookup brings, under the 64 KiB an open brings
	writeFile(t, filepath.Join(dir, "in.dat"), strings.Repeat("0123456789", size/10), 0o644)
	// in.dat is read once, whole; out.dat written in one go from the
	// start; seek.dat written once, 10,000 bytes in.
	writeFile(t, filepath.Join(dir, "io.sh"), `#!/bin/sh
set -e
cat in.dat > out.dat
dd if=/dev/zero of=seek.dat bs=1000 count=1 seek=10 conv=notrunc 2>/dev/null
`, 0o755)
	c := p.submit(t, dir, "io.sub", "executable = io.sh\noutput = io.out\nerror = io.err\nlog = io.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	if out, code := p.harrier(t, "wait", "--timeout", "90", id); code != 0 {
		errOut, _ := os.ReadFile(filepath.Join(dir, "io.err"))
		t.Fatalf("wait: exit %d: %s\nstderr: %s\n%s", code, out, errOut, p.must(t, "history", "-long", id))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.dat")); len(b) != size {
		t.Fatalf("out.dat has %d bytes, want %d", len(b), size)
	}

	hist := p.jobs(t, "history", id)
	if len(hist) != 1 {
		t.Fatalf("history has %d ads for %s", len(hist), id)
	}
	ad := hist[0]
	num := func(m map[string]any, name string) int64 {
		v, ok := m[name].(float64)
		if !ok {
			t.Errorf("%s = %v (%T), want a number", name, m[name], m[name])
		}
		return int64(v)
	}
	list, _ := ad["RemoteIOFiles"].([]any)
	files := map[string]map[string]any{}
	var sum struct{ reads, readBytes, writes, writeBytes, seeks int64 }
	for _, e := range list {
		f, _ := e.(map[string]any)
		name, _ := f["Name"].(string)
		files[filepath.Base(name)] = f
		sum.reads += num(f, "ReadCount")
		sum.readBytes += num(f, "ReadBytes")
		sum.writes += num(f, "WriteCount")
		sum.writeBytes += num(f, "WriteBytes")
		sum.seeks += num(f, "SeekCount")
	}
	// The kernel caches the job's writes and sends whole pages: the
	// shadow counts seek.dat's write from the start of its page to the
	// end of the file.
	pg := int64(os.Getpagesize())
	seekBytes := 11000 - 10000/pg*pg
	want := map[string]map[string]int64{
		"in.dat":   {"OpenCount": 1, "ReadCount": 1, "ReadBytes": size, "WriteCount": 0, "WriteBytes": 0, "SeekCount": 0},
		"out.dat":  {"OpenCount": 1, "ReadCount": 0, "ReadBytes": 0, "WriteCount": 1, "WriteBytes": size, "SeekCount": 0},
		"seek.dat": {"OpenCount": 1, "ReadCount": 0, "ReadBytes": 0, "WriteCount": 1, "WriteBytes": seekBytes, "SeekCount": 1},
	}
	for name, attrs := range want {
		f := files[name]
		if f == nil {
			t.Errorf("RemoteIOFiles has no entry for %s: %v", name, list)
			continue
		}
		if n, _ := f["Name"].(string); n != filepath.Join(dir, name) {
			t.Errorf("%s: Name = %q, want the submit-side path", name, n)
		}
		for attr, v := range attrs {
			if got := num(f, attr); got != v {
				t.Errorf("%s: %s = %d, want %d", name, attr, got, v)
			}
		}
	}
	// The totals add up the files (which may include others the job's
	// shell looked at).
	for attr, v := range map[string]int64{
		"FileReadCount": sum.reads, "FileReadBytes": sum.readBytes, "BytesRecvd": sum.readBytes,
		"FileWriteCount": sum.writes, "FileWriteBytes": sum.writeBytes, "BytesSent": sum.writeBytes,
		"FileSeekCount": sum.seeks,
	} {
		if got := num(ad, attr); got != v {
			t.Errorf("%s = %d, want %d, the sum over RemoteIOFiles", attr, got, v)
		}
	}
	if sum.readBytes < size || sum.writeBytes < size+1000 || sum.seeks < 1 {
		t.Errorf("totals %+v are less than the job's own I/O", sum)
	}

	// The same figures through -af and -long.
	af := strings.Fields(p.must(t, "history", "-af", "FileReadBytes", "FileWriteBytes", "FileSeekCount", id))
	if wantAF := []string{fmt.Sprint(sum.readBytes), fmt.Sprint(sum.writeBytes), fmt.Sprint(sum.seeks)}; strings.Join(af, " ") != strings.Join(wantAF, " ") {
		t.Errorf("history -af = %v, want %v", af, wantAF)
	}
	long := p.must(t, "history", "-long", id)
	for _, s := range []string{fmt.Sprintf("FileWriteBytes = %d", sum.writeBytes), `Name = "` + filepath.Join(dir, "seek.dat") + `"`} {
		if !strings.Contains(long, s) {
			t.Errorf("history -long lacks %q:\n%s", s, long)
		}
	}

	// The terminated event: HTCondor's byte lines and one line per file.
	log, err := os.ReadFile(filepath.Join(dir, "io.log"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := joblog.Read(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var term *joblog.Event
	for i := range events {
		if events[i].Type == joblog.Terminated {
			term = &events[i]
		}
	}
	if term == nil {
		t.Fatalf("no terminated event in\n%s", log)
	}
	if term.BytesReceived != sum.readBytes || term.BytesSent != sum.writeBytes ||
		term.TotalBytesReceived != sum.readBytes || term.TotalBytesSent != sum.writeBytes {
		t.Errorf("terminated event: run %d/%d total %d/%d bytes received/sent, want %d/%d\n%s",
			term.BytesReceived, term.BytesSent, term.TotalBytesReceived, term.TotalBytesSent, sum.readBytes, sum.writeBytes, log)
	}
	for _, s := range []string{
		fmt.Sprintf("%s: 1 opens, 1 reads, %d bytes read, 0 writes, 0 bytes written, 0 seeks", filepath.Join(dir, "in.dat"), size),
		fmt.Sprintf("%s: 1 opens, 0 reads, 0 bytes read, 1 writes, %d bytes written, 1 seeks", filepath.Join(dir, "seek.dat"), seekBytes),
	} {
		if !strings.Contains(term.Files, s) {
			t.Errorf("terminated event's files lack %q:\n%s", s, log)
		}
	}
	if !strings.Contains(string(log), fmt.Sprintf("\t%d  -  Run Bytes Received By Job\n", sum.readBytes)) {
		t.Errorf("the log lacks HTCondor's Run Bytes Received line:\n%s", log)
	}
}

// TestRemoteIOExample runs examples/remote-io, which scripts/demo shows,
// in a pool whose jobs run in containers, and checks what each of its
// mappings did to the submit-side files and what the shadow counted.
func TestRemoteIOExample(t *testing.T) {
	p := startContainerPool(t)
	dir := copyExample(t, "remote-io")
	if out, err := exec.Command(filepath.Join(dir, "prepare.sh")).CombinedOutput(); err != nil {
		t.Fatalf("prepare.sh: %v: %s", err, out)
	}
	// The job runs as nobody.
	if out, err := exec.Command("chmod", "-R", "a+rwX", dir).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	c := p.submit(t, dir, "analyse.sub", mustRead(t, filepath.Join(dir, "analyse.sub")))
	id := fmt.Sprintf("%d.0", c)
	if out, code := p.harrier(t, "wait", "--timeout", "90", id); code != 0 {
		t.Fatalf("wait: exit %d: %s\nstderr: %s\n%s", code, out, mustRead(t, filepath.Join(dir, "analyse.err")), p.must(t, "history", "-long", id))
	}
	out := mustRead(t, filepath.Join(dir, "analyse.out"))
	for _, s := range []string{"readings: 200 lines", "big.dat: 4194304 bytes"} {
		if !strings.Contains(out, s) {
			t.Errorf("analyse.out lacks %q:\n%s", s, out)
		}
	}
	// file_remaps: summary.txt landed in results/; append_files: one line.
	summary := mustRead(t, filepath.Join(dir, "results", "summary.txt"))
	if strings.Count(summary, "\n") != 3 {
		t.Errorf("results/summary.txt:\n%s", summary)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.txt")); err == nil {
		t.Error("summary.txt was written in the job's directory, not where it was remapped")
	}
	journal := mustRead(t, filepath.Join(dir, "journal.log"))
	if !strings.HasSuffix(journal, ": 200 readings\n") || strings.Count(journal, "\n") != 1 {
		t.Errorf("journal.log: %q", journal)
	}

	// The shadow counted each physical file.
	files := map[string]map[string]any{}
	ads := p.jobs(t, "history", id)
	if len(ads) != 1 {
		t.Fatalf("history has %d ads for %s", len(ads), id)
	}
	list, _ := ads[0]["RemoteIOFiles"].([]any)
	for _, e := range list {
		f, _ := e.(map[string]any)
		name, _ := f["Name"].(string)
		files[name] = f
	}
	for name, want := range map[string][2]int64{ // bytes read at least, bytes written
		"results/summary.txt": {0, int64(len(summary))},
		"journal.log":         {0, int64(len(journal))},
		"readings.csv.gz":     {1, 0},
		"big.dat":             {4194304, 0},
	} {
		f := files[filepath.Join(dir, name)]
		if f == nil {
			t.Errorf("RemoteIOFiles has no entry for %s: %v", name, list)
			continue
		}
		read, _ := f["ReadBytes"].(float64)
		written, _ := f["WriteBytes"].(float64)
		if int64(read) < want[0] || int64(written) != want[1] {
			t.Errorf("%s: %v bytes read, %v written; want at least %d read, %d written", name, read, written, want[0], want[1])
		}
	}
}
