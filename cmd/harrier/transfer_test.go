package main

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// transferTree writes the tree a job's inputs round-trip: nested
// directories, empty files and directories, links inside the tree, odd
// names.
func transferTree(t *testing.T, dir string) {
	t.Helper()
	for name, data := range map[string]string{
		"top.txt":                 "top\n",
		"empty":                   "",
		"a/b/c/deep.dat":          strings.Repeat("deep", 10000),
		"a/with space.txt":        "spaces\n",
		"ünïcode dir/naïve ☃.txt": "snow\n",
		"ünïcode dir/empty too":   "",
		"a/b/script.sh":           "#!/bin/sh\n",
	} {
		writeFile(t, filepath.Join(dir, name), data, 0o644)
	}
	if err := os.Chmod(filepath.Join(dir, "a/b/script.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"link": "top.txt", "a/b/up": "../with space.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// treeListing describes a tree: each name with its kind, permissions and
// contents or link target.
func treeListing(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link to " + target
		case d.IsDir():
			out[rel] = "dir " + info.Mode().Perm().String()
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%s %d bytes %q", info.Mode().Perm(), len(b), b[:min(len(b), 20)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// chownAll gives the tree to uid:gid, links too.
func chownAll(t testing.TB, dir string, uid, gid uint32) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(gid))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFileTransfer runs jobs with should_transfer_files = YES as a real
// user: a tree of inputs round-trips exactly through a job that works in
// its scratch directory and copies it to its outputs; a URL input comes
// from a loopback HTTP server, and only the files the job made come back
// by default; a missing input, another user's file named by its path and
// an output link pointing out of the job's directory hold their jobs
// with HTCondor's codes and the file's name; a name climbing out of the
// job's directory is refused at submit. The transfers are in the job's
// event log (040) and ad.
func TestFileTransfer(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	owner, other := newUser(t), newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "xfer")
	transferTree(t, filepath.Join(dir, "tree"))
	writeFile(t, filepath.Join(dir, "flat", "inner.dat"), "inner\n", 0o644)
	writeFile(t, filepath.Join(dir, "copy.sh"), `#!/bin/sh
pwd > where.txt
{ test -f inner.dat && echo "flat contents at the top"; test -d flat || echo "no flat directory"; } > report.txt
cp -a tree out_tree
`, 0o755)
	writeFile(t, filepath.Join(dir, "url.sh"), "#!/bin/sh\ncat data.bin > got.txt\n", 0o755)
	writeFile(t, filepath.Join(dir, "leak.sh"), "#!/bin/sh\nln -s /etc/passwd leak\n", 0o755)
	chownAll(t, dir, uid, gid)
	secret := filepath.Join(other.HomeDir, "secret.txt")
	writeFile(t, secret, "the other user's\n", 0o600)
	ou, og := lookupIDs(t, other.Username)
	chownAll(t, secret, ou, og)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/files/data.bin" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "served over http\n")
	})}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })

	round := p.submitAs(t, owner.Username, dir, "round.sub", `executable = copy.sh
should_transfer_files = YES
transfer_input_files = tree, flat/
transfer_output_files = out_tree, report.txt, where.txt
log = round.log
queue
`)
	url := p.submitAs(t, owner.Username, dir, "url.sub", fmt.Sprintf(`executable = url.sh
should_transfer_files = YES
transfer_input_files = http://%s/files/data.bin
output = url.out
queue
`, lis.Addr()))
	missing := p.submitAs(t, owner.Username, dir, "missing.sub", `executable = copy.sh
should_transfer_files = YES
transfer_input_files = tree, missing.dat
queue
`)
	stolen := p.submitAs(t, owner.Username, dir, "stolen.sub", `executable = url.sh
should_transfer_files = YES
transfer_input_files = `+secret+`
queue
`)
	leak := p.submitAs(t, owner.Username, dir, "leak.sub", `executable = leak.sh
should_transfer_files = YES
transfer_output_files = leak
queue
`)
	writeFile(t, filepath.Join(dir, "climb.sub"), "executable = copy.sh\nshould_transfer_files = YES\ntransfer_input_files = ../x\nqueue\n", 0o644)
	if out, code := harrierAs(t, p.env, owner.Username, "submit", filepath.Join(dir, "climb.sub")); code == 0 || !strings.Contains(out, "..") {
		t.Errorf("submit with transfer_input_files = ../x: exit %d: %s; want it refused", code, out)
	}

	id := func(c int) string { return fmt.Sprintf("%d.0", c) }
	for _, c := range []int{round, url} {
		if out, code := p.harrier(t, "wait", "--timeout", "60", id(c)); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id(c), code, out)
		}
	}
	want, got := treeListing(t, filepath.Join(dir, "tree")), treeListing(t, filepath.Join(dir, "out_tree"))
	for name, w := range want {
		if got[name] != w {
			t.Errorf("out_tree/%s: %s, want %s", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("out_tree has %d entries, tree %d", len(got), len(want))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.txt")); string(b) != "flat contents at the top\nno flat directory\n" {
		t.Errorf("report.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "where.txt")); strings.TrimSpace(string(b)) == dir || len(b) == 0 {
		t.Errorf("the job worked in %q, not in its scratch directory", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "got.txt")); string(b) != "served over http\n" {
		t.Errorf("got.txt: %q, want the URL's contents", b)
	}
	// An input the job did not change is not one of its outputs.
	if _, err := os.Stat(filepath.Join(dir, "data.bin")); !os.IsNotExist(err) {
		t.Errorf("the unchanged URL input came back as an output: %v", err)
	}
	h := p.historyAd(t, id(round))
	if n, _ := h["BytesRecvd"].(float64); n < 40000 {
		t.Errorf("BytesRecvd %v: want the inputs' bytes counted", h["BytesRecvd"])
	}
	if n, _ := h["TransferInputFiles"].(float64); n != 8 {
		t.Errorf("TransferInputFiles %v, want the 7 files of tree and flat/'s one", h["TransferInputFiles"])
	}
	if n, _ := h["BytesSent"].(float64); n < 40000 {
		t.Errorf("BytesSent %v: want the outputs' bytes counted", h["BytesSent"])
	}
	log, _ := os.ReadFile(filepath.Join(dir, "round.log"))
	for _, s := range []string{"Started transferring input files", "Finished transferring input files",
		"Started transferring output files", "Finished transferring output files", "8  -  Files Transferred"} {
		if !strings.Contains(string(log), s) {
			t.Errorf("the event log lacks %q:\n%s", s, log)
		}
	}

	held := func(c int, code float64, names ...string) {
		t.Helper()
		eventually(t, 120*time.Second, "job "+id(c)+" held", func() bool { return p.jobStatus(t, id(c)) == 5 })
		q := p.jobs(t, "q", id(c))[0]
		reason, _ := q["HoldReason"].(string)
		if q["HoldReasonCode"] != code {
			t.Errorf("job %s: HoldReasonCode %v, want %v (%s)", id(c), q["HoldReasonCode"], code, reason)
		}
		for _, n := range names {
			if !strings.Contains(reason, n) {
				t.Errorf("job %s: hold reason %q does not say %q", id(c), reason, n)
			}
		}
	}
	held(missing, 13, "missing.dat")
	held(stolen, 13, secret, "permission denied")
	held(leak, 12, "leak")
	if _, err := os.Lstat(filepath.Join(dir, "leak")); !os.IsNotExist(err) {
		t.Errorf("the link out of the job's directory came home: %v", err)
	}
}

// TestTransferOnExitOrEvict: an evicted job with when_to_transfer_output
// = ON_EXIT_OR_EVICT sends its intermediate files home, and they come
// back with its next start, on another machine: it goes on from them.
// What its first run made and the second left alone comes home too.
func TestTransferOnExitOrEvict(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 2, "")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "evict")
	writeFile(t, filepath.Join(dir, "count.sh"), `#!/bin/sh
n=$(cat progress.txt 2>/dev/null || echo 0)
echo "start at $n"
[ -e made.txt ] || echo "made at $n" > made.txt
while [ "$n" -lt 12 ]; do
	n=$((n + 1))
	echo "$n" > progress.txt
	echo "step $n"
	sleep 1
done
`, 0o755)
	chownAll(t, dir, uid, gid)
	c := p.submitAs(t, owner.Username, dir, "count.sub", `executable = count.sh
should_transfer_files = YES
when_to_transfer_output = ON_EXIT_OR_EVICT
want_checkpoint = false
requirements = TARGET.Name =!= MY.LastRemoteHost
stream_output = true
output = count.out
log = count.log
queue
`)
	id := fmt.Sprintf("%d.0", c)
	out := func() string { b, _ := os.ReadFile(filepath.Join(dir, "count.out")); return string(b) }
	eventually(t, 90*time.Second, "the job to count to 4", func() bool { return strings.Contains(out(), "step 4\n") })
	p.must(t, "vacate", id)
	if o, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, o)
	}
	// The second run's output replaces the first's: it started where the
	// first left its progress, not at 0.
	o := out()
	if strings.Contains(o, "start at 0") || !strings.Contains(o, "step 12") {
		t.Errorf("the run after the eviction did not go on from its intermediate files:\n%s", o)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "progress.txt")); strings.TrimSpace(string(b)) != "12" {
		t.Errorf("progress.txt: %q, want the final output", b)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "made.txt")); string(b) != "made at 0\n" {
		t.Errorf("made.txt, made by the first run: %q %v", b, err)
	}
	h := p.historyAd(t, id)
	if h["NumJobStarts"] != 2.0 {
		t.Errorf("NumJobStarts %v, want 2", h["NumJobStarts"])
	}
	if _, err := os.Stat(filepath.Join(p.dir, "spool", "checkpoints", owner.Username, id+".xfer")); !os.IsNotExist(err) {
		t.Errorf("the intermediate files outlived the job: %v", err)
	}
}

// TestTransferResumeScratchAtCheckpoint kills the starter of a job with
// transferred files between two of its periodic checkpoints, as a crash
// of its machine would: restored from the last one, the job finds its
// scratch directory as its memory knows it. Its file, appended to as
// fast as a shell can, runs on from the checkpoint's last line, with
// none twice: the directory was archived while the dump had the job
// frozen, not once it ran on.
func TestTransferResumeScratchAtCheckpoint(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "fast")
	writeFile(t, filepath.Join(dir, "append.sh"), `#!/bin/bash
exec 3>>lines.txt
i=0
while [ "$SECONDS" -lt 16 ]; do
	i=$((i + 1))
	echo "$i" >&3
done
echo "wrote $i"
`, 0o755)
	chownAll(t, dir, uid, gid)
	c := p.submitAs(t, owner.Username, dir, "append.sub", `executable = append.sh
should_transfer_files = YES
checkpoint_interval = 3
output = append.out
log = append.log
queue
`)
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 90*time.Second, "two checkpoints", func() bool {
		ads := p.jobs(t, "q", id)
		if len(ads) == 0 {
			t.Fatalf("the job ended before two checkpoints: %v", p.historyAd(t, id))
		}
		n, _ := ads[0]["NumCkpts"].(float64)
		return n >= 2
	})
	time.Sleep(1500 * time.Millisecond) // halfway to the next one
	killStarters(t, p)
	if o, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, o)
	}
	if h := p.historyAd(t, id); h["NumRestores"] != 1.0 {
		t.Fatalf("NumRestores %v, want 1: the job was not restored after its starter died", h["NumRestores"])
	}
	b, err := os.ReadFile(filepath.Join(dir, "lines.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("lines.txt: line %d is %q (of %d lines): the restored job found its file as the lost run left it", i+1, l, len(lines))
		}
	}
	if out := mustRead(t, filepath.Join(dir, "append.out")); out != fmt.Sprintf("wrote %d\n", len(lines)) {
		t.Errorf("append.out: %q, want the count of %d lines", out, len(lines))
	}
}

// TestTransferMigration vacates a job with should_transfer_files = YES
// twice between the two startds of a pool, with CRIU (want_checkpoint's
// default): a real user's counting job that appends to a file in its
// scratch directory through a descriptor it keeps open. Each restore
// finds that directory as the dump left it, so its count runs on
// unbroken, in the file and in its output (kept there), and both come
// home at the end. The job sees its submit-side directory too
// (want_submit_dir), and keeps a second file open there, which its
// restores reopen through iofs: the count runs on in it as well.
func TestTransferMigration(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 2, "")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "hop")
	writeFile(t, filepath.Join(dir, "count.sh"), `#!/bin/sh
# Counts to $1, a number a quarter second, each appended to count.txt in
# the scratch directory and to seen.txt in the submit-side directory,
# through descriptors held open throughout.
n=${1:-40}
exec 3>>count.txt 4>>"$_CONDOR_SCRATCH_DIR/.submit/seen.txt"
i=0
while [ "$i" -lt "$n" ]; do
	i=$((i + 1))
	echo "$i" >&3
	echo "$i" >&4
	echo "count $i on $(hostname)"
	sleep 0.25
done
`, 0o755)
	chownAll(t, dir, uid, gid)
	c := p.submitAs(t, owner.Username, dir, "count.sub", `executable = count.sh
arguments = 60
should_transfer_files = YES
want_submit_dir = true
requirements = TARGET.Name =!= MY.LastRemoteHost
output = count.out
log = count.log
queue
`)
	id := fmt.Sprintf("%d.0", c)
	// Its output stays with it until it ends (it does not stream it);
	// seen.txt, on the submit side, shows how far it has counted.
	printed := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "seen.txt"))
		return strings.Count(string(b), "\n")
	}
	host := func() string { return strings.TrimSpace(p.must(t, "q", "-af", "RemoteHost", id)) }
	for _, past := range []int{8, 24} {
		eventually(t, 90*time.Second, fmt.Sprintf("the job to count past %d", past), func() bool { return printed() >= past })
		from := host()
		p.must(t, "vacate", id)
		eventually(t, 90*time.Second, "the job to run on the other startd", func() bool {
			h := host()
			return h != "" && h != "undefined" && h != from
		})
	}
	if o, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, o)
	}
	// count.txt came home, written by the three runs through the one
	// descriptor; so did count.out, kept in the scratch directory by the
	// three runs, not streamed.
	checkCounted(t, dir, 60)
	var want strings.Builder
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "seen.txt")); string(b) != want.String() {
		t.Errorf("seen.txt, written on the submit side through iofs, is not 1 to 60:\n%s", b)
	}
	h := p.historyAd(t, id)
	if h["NumRestores"] != 2.0 || h["NumRestoreFailures"] != nil {
		t.Errorf("NumRestores %v, NumRestoreFailures %v (%v), want 2 restores and no failure",
			h["NumRestores"], h["NumRestoreFailures"], h["LastRestoreFailure"])
	}
}

// TestTransferSeesSubmitDir runs jobs with should_transfer_files = YES
// as a real user: with want_submit_dir the job, working in its scratch
// directory, also opens files of its submit-side directory that were not
// transferred, under $_CONDOR_SCRATCH_DIR/.submit, reading and writing
// them as their owner (another user's file there stays closed to it);
// without it, that directory is not there.
func TestTransferSeesSubmitDir(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	owner, other := newUser(t), newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "both")
	writeFile(t, filepath.Join(dir, "big-table.txt"), "left on the submit side\n", 0o644)
	writeFile(t, filepath.Join(dir, "peek.sh"), `#!/bin/sh
s="$_CONDOR_SCRATCH_DIR/.submit"
{
	pwd
	cat "$s/big-table.txt" 2>/dev/null || echo "no big-table.txt"
	echo "written from $(pwd)" > "$s/note.txt" || echo "cannot write note.txt"
	cat "$s/theirs.txt" 2>/dev/null || echo "not theirs.txt"
} > report.txt
`, 0o755)
	chownAll(t, dir, uid, gid)
	theirs := filepath.Join(dir, "theirs.txt")
	writeFile(t, theirs, "the other user's\n", 0o600)
	ou, og := lookupIDs(t, other.Username)
	chownAll(t, theirs, ou, og)
	for _, tc := range []struct {
		want bool
		sub  string
		out  string
	}{
		{true, "with.sub", "/srv\nleft on the submit side\nnot theirs.txt\n"},
		{false, "without.sub", "/srv\nno big-table.txt\ncannot write note.txt\nnot theirs.txt\n"},
	} {
		c := p.submitAs(t, owner.Username, dir, tc.sub, fmt.Sprintf(`executable = peek.sh
should_transfer_files = YES
want_submit_dir = %v
log = peek.log
queue
`, tc.want))
		id := fmt.Sprintf("%d.0", c)
		if o, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, o)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "report.txt")); string(b) != tc.out {
			t.Errorf("want_submit_dir = %v: report.txt %q, want %q", tc.want, b, tc.out)
		}
		note, err := os.ReadFile(filepath.Join(dir, "note.txt"))
		switch {
		case tc.want && string(note) != "written from /srv\n":
			t.Errorf("want_submit_dir: note.txt %q, %v", note, err)
		case !tc.want && err == nil:
			t.Errorf("without want_submit_dir the job wrote note.txt on the submit side: %q", note)
		}
		os.Remove(filepath.Join(dir, "note.txt"))
	}
}

// TestTransferStreamOutput: a job with transferred files keeps its
// standard output and error in its scratch directory and sends them home
// when it ends, as HTCondor does, so that it needs nothing of its submit
// machine while it runs; with stream_output and stream_error they reach
// the submit side as it writes them. The spooled files are not among the
// job's outputs.
func TestTransferStreamOutput(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "stream")
	writeFile(t, filepath.Join(dir, "talk.sh"), `#!/bin/sh
s="$_CONDOR_SCRATCH_DIR/.submit"
echo "to stdout"
echo "to stderr" >&2
touch "$s/began.$1"
while [ ! -e "$s/go.$1" ]; do sleep 0.2; done
echo "at the end"
`, 0o755)
	chownAll(t, dir, uid, gid)
	for _, tc := range []struct{ name, extra, early string }{
		{"streamed", "stream_output = true\nstream_error = true\n", "to stdout\n"},
		{"spooled", "", ""},
	} {
		c := p.submitAs(t, owner.Username, dir, tc.name+".sub", fmt.Sprintf(`executable = talk.sh
arguments = %s
should_transfer_files = YES
want_submit_dir = true
%soutput = %s.out
error = %s.err
log = %s.log
queue
`, tc.name, tc.extra, tc.name, tc.name, tc.name))
		out := filepath.Join(dir, tc.name+".out")
		eventually(t, 90*time.Second, tc.name+" job to write its first lines", func() bool {
			_, err := os.Stat(filepath.Join(dir, "began."+tc.name))
			return err == nil
		})
		if tc.early != "" {
			eventually(t, 30*time.Second, "the streamed job's output while it runs", func() bool {
				b, _ := os.ReadFile(out)
				return string(b) == tc.early
			})
		} else if b, _ := os.ReadFile(out); len(b) != 0 {
			t.Errorf("%s.out while its job runs: %q, want nothing yet", tc.name, b)
		}
		writeFile(t, filepath.Join(dir, "go."+tc.name), "", 0o644)
		id := fmt.Sprintf("%d.0", c)
		if o, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, o)
		}
		if got := mustRead(t, out); got != "to stdout\nat the end\n" {
			t.Errorf("%s.out = %q", tc.name, got)
		}
		if got := mustRead(t, filepath.Join(dir, tc.name+".err")); got != "to stderr\n" {
			t.Errorf("%s.err = %q", tc.name, got)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".harrier*")); len(m) != 0 {
		t.Errorf("spool files came home as outputs: %v", m)
	}
}
