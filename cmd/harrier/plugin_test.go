package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// demoPlugin is an administrator's transfer plugin, in shell, for the
// made-up scheme demo://: a download writes "demo NAME uid=UID
// outside=..." into the file, with the user it ran as and whether it
// could write into outside (a directory its user may write, beyond its
// own); an upload PUTs the file to store/NAME with curl.
func demoPlugin(store, outside string) string {
	return `#!/bin/sh
if [ "$1" = -classad ]; then
	printf 'MultipleFileSupport = true\nPluginVersion = "1.0"\nPluginType = "FileTransfer"\nSupportedMethods = "demo"\n'
	exit 0
fi
in=$2 out=$4 mode=$5
: > "$out"
while read -r name eq value; do
	value=${value#\"}; value=${value%\"}
	case $name in
	Url) url=$value ;;
	LocalFileName) local=$value ;;
	esac
	if [ -n "$url" ] && [ -n "$local" ]; then
		if [ "$mode" = -upload ]; then
			curl -sf -T "$local" "` + store + `/${url##*/}" || exit 1
		else
			if echo x > ` + outside + `/escaped 2>/dev/null; then o=written; else o=refused; fi
			echo "demo ${url##*/} uid=$(id -u) outside=$o" > "$local"
		fi
		printf 'TransferUrl = "%s"\nTransferSuccess = true\nTransferTotalBytes = %d\n\n' "$url" "$(wc -c < "$local")" >> "$out"
		url= local=
	fi
done < "$in"
`
}

// bobPlugin is a user's own plugin for the scheme bobs://.
const bobPlugin = `#!/bin/sh
if [ "$1" = -classad ]; then
	printf 'MultipleFileSupport = true\nSupportedMethods = "bobs"\n'
	exit 0
fi
in=$2 out=$4
url=$(sed -n 's/^Url = "\(.*\)"$/\1/p' "$in")
local=$(sed -n 's/^LocalFileName = "\(.*\)"$/\1/p' "$in")
echo "bob's plugin ${url##*/} uid=$(id -u)" > "$local"
printf 'TransferUrl = "%s"\nTransferSuccess = true\n' "$url" > "$out"
`

// TestTransferPlugins: the administrator's plugin for demo:// (in
// FILETRANSFER_PLUGINS) is advertised in the machine ad and fetches the
// inputs of alice's job; bob's own plugin, sent with his job, fetches
// bobs:// URLs; both run as the job's user, never root, writing only in
// the job's scratch directory (not in a directory open to all); alice cannot use
// bob's plugin. A job needing a scheme no machine supports stays idle,
// and -better-analyze says why; one matched all the same is held naming
// the URL.
// Outputs go to output_destination: a loopback HTTP server (PUT, with
// checksums checked), a file:// directory written as the job's user (one
// closed to that user holds the job, though root could write it), and
// the demo plugin in upload mode; an upload the server refuses holds the
// job with code 13 and the file's name.
func TestTransferPlugins(t *testing.T) {
	bin := publicBinary(t)
	admin, err := os.MkdirTemp("", "harrier-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(admin) })
	files := filepath.Join(admin, "files")
	for _, d := range []string{admin, files} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// The job's user writes the destinations.
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		put = map[string][]byte{}
	)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || strings.HasPrefix(r.URL.Path, "/refuse/") {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		mu.Lock()
		put[r.URL.Path] = b
		mu.Unlock()
	})}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })

	plugin := filepath.Join(admin, "demo_plugin")
	writeFile(t, plugin, demoPlugin(fmt.Sprintf("http://%s/store", lis.Addr()), files), 0o755)
	p := startPoolFrom(t, bin, 1, "FILETRANSFER_PLUGINS = "+plugin)
	if m, _ := p.machine(t)["HasFileTransferPluginMethods"].(string); !strings.Contains(","+m+",", ",demo,") {
		t.Errorf("HasFileTransferPluginMethods = %q, want demo among them", m)
	}
	alice, bob := newUser(t), newUser(t)

	adir := filepath.Join(alice.HomeDir, "plugins")
	writeFile(t, filepath.Join(adir, "get.sh"), "#!/bin/sh\ncat alpha.txt > got_alpha.txt\nid -u > job_uid.txt\n", 0o755)
	writeFile(t, filepath.Join(adir, "make.sh"), `#!/bin/sh
head -c 300000 /dev/urandom > big.dat
sha256sum big.dat | cut -d' ' -f1 > big.sum
id -u > uid.txt
echo made
echo "to stderr" >&2
`, 0o755)
	au, ag := lookupIDs(t, alice.Username)
	chownAll(t, adir, au, ag)
	bdir := filepath.Join(bob.HomeDir, "plugins")
	writeFile(t, filepath.Join(bdir, "get.sh"), "#!/bin/sh\ncat beta.txt > got_beta.txt\n", 0o755)
	writeFile(t, filepath.Join(bdir, "bob_plugin.sh"), bobPlugin, 0o700)
	bu, bg := lookupIDs(t, bob.Username)
	chownAll(t, bdir, bu, bg)

	demo := p.submitAs(t, alice.Username, adir, "demo.sub", `executable = get.sh
should_transfer_files = YES
transfer_input_files = demo://host/alpha.txt
queue
`)
	own := p.submitAs(t, bob.Username, bdir, "own.sub", `executable = get.sh
should_transfer_files = YES
transfer_input_files = bobs://anywhere/beta.txt
transfer_plugins = bobs = bob_plugin.sh
queue
`)
	nowhere := p.submitAs(t, alice.Username, adir, "nowhere.sub", `executable = get.sh
should_transfer_files = YES
transfer_input_files = nowhere://host/x.txt
queue
`)
	// A job whose own requirements take the scheme's place is matched,
	// and held by the starter naming the URL no plugin moves.
	unmoved := p.submitAs(t, alice.Username, adir, "unmoved.sub", `executable = get.sh
should_transfer_files = YES
transfer_input_files = nowhere://host/y.txt
requirements = HasFileTransferPluginMethods =!= undefined
queue
`)
	toHTTP := p.submitAs(t, alice.Username, adir, "http.sub", fmt.Sprintf(`executable = make.sh
should_transfer_files = YES
output_destination = http://%s/results/
transfer_output_remaps = "big.sum = sums/big.sha256"
output = made.out
error = made.err
log = http.log
queue
`, lis.Addr()))
	toFile := p.submitAs(t, alice.Username, adir, "file.sub", `executable = make.sh
should_transfer_files = YES
output_destination = file://`+files+`
output = made.out
queue
`)
	toPlugin := p.submitAs(t, alice.Username, adir, "store.sub", `executable = make.sh
should_transfer_files = YES
output_destination = demo://store/run
output = made.out
queue
`)
	// A directory root may write and the job's user may not.
	closed := filepath.Join(admin, "closed")
	if err := os.Mkdir(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	toClosed := p.submitAs(t, alice.Username, adir, "closed.sub", `executable = make.sh
should_transfer_files = YES
output_destination = file://`+closed+`
queue
`)
	refused := p.submitAs(t, alice.Username, adir, "refused.sub", fmt.Sprintf(`executable = make.sh
should_transfer_files = YES
output_destination = http://%s/refuse/
queue
`, lis.Addr()))

	// Alice cannot run bob's plugin: it is read as hers, to go with her
	// job's inputs.
	stolen := p.submitAs(t, alice.Username, adir, "stolen.sub", `executable = get.sh
should_transfer_files = YES
transfer_input_files = bobs://anywhere/beta.txt
transfer_plugins = bobs = `+filepath.Join(bdir, "bob_plugin.sh")+`
queue
`)

	id := func(c int) string { return fmt.Sprintf("%d.0", c) }
	for _, c := range []int{demo, own, toHTTP, toFile, toPlugin} {
		if out, code := p.harrier(t, "wait", "--timeout", "120", id(c)); code != 0 {
			t.Fatalf("wait %s: exit %d: %s (%v)", id(c), code, out, p.jobs(t, "q", id(c)))
		}
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
		}
		return strings.TrimSpace(string(b))
	}
	jobUID := read(filepath.Join(adir, "job_uid.txt"))
	if jobUID == "" || jobUID == "0" {
		t.Fatalf("the job ran as uid %q", jobUID)
	}
	if got, want := read(filepath.Join(adir, "got_alpha.txt")), "demo alpha.txt uid="+jobUID+" outside=refused"; got != want {
		t.Errorf("alice's demo:// input: %q, want %q (the admin's plugin run as the job's user, writing only in the job's directory)", got, want)
	}
	if got, want := read(filepath.Join(bdir, "got_beta.txt")), "bob's plugin beta.txt uid="+jobUID; got != want {
		t.Errorf("bob's bobs:// input: %q, want %q (his plugin run as the job's user)", got, want)
	}

	// output_destination: nothing comes home, everything is at the URL,
	// and the event log says when the outputs went, as for outputs sent
	// home.
	if log := read(filepath.Join(adir, "http.log")); !strings.Contains(log, "Started transferring output files") ||
		!strings.Contains(log, "Finished transferring output files") || !strings.Contains(log, "5  -  Files Transferred") {
		t.Errorf("the event log of a job with output_destination lacks its output transfer:\n%s", log)
	}
	for _, name := range []string{"big.dat", "big.sum", "uid.txt"} {
		if _, err := os.Stat(filepath.Join(adir, name)); !os.IsNotExist(err) {
			t.Errorf("%s came home despite output_destination: %v", name, err)
		}
	}
	checksum := func(where string, data []byte, sum string) {
		t.Helper()
		h := sha256.Sum256(data)
		if len(data) != 300000 || hex.EncodeToString(h[:]) != strings.TrimSpace(sum) {
			t.Errorf("%s: big.dat of %d bytes does not match its checksum %q", where, len(data), sum)
		}
	}
	mu.Lock()
	// transfer_output_remaps names the file at the destination.
	checksum("over HTTP", put["/results/big.dat"], string(put["/results/sums/big.sha256"]))
	if u := strings.TrimSpace(string(put["/results/uid.txt"])); u != jobUID {
		t.Errorf("PUT /results/uid.txt: %q, want %q", u, jobUID)
	}
	// The job's standard output and error go there too, under their names.
	if o, e := string(put["/results/made.out"]), string(put["/results/made.err"]); o != "made\n" || e != "to stderr\n" {
		t.Errorf("PUT made.out %q, made.err %q: want the job's output and error", o, e)
	}
	mu.Unlock()
	data, _ := os.ReadFile(filepath.Join(files, "big.dat"))
	checksum("file://", data, read(filepath.Join(files, "big.sum")))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(files, "big.dat"), &st); err != nil || fmt.Sprint(st.Uid) != jobUID {
		t.Errorf("file:// output owned by uid %d (%v), want the job's user %s", st.Uid, err, jobUID)
	}
	if o := read(filepath.Join(files, "made.out")); o != "made" {
		t.Errorf("file:// made.out: %q, want the job's output", o)
	}
	mu.Lock()
	checksum("demo:// upload", put["/store/big.dat"], string(put["/store/big.sum"]))
	if o := string(put["/store/made.out"]); o != "made\n" {
		t.Errorf("demo:// made.out: %q, want the job's output", o)
	}
	mu.Unlock()

	eventually(t, 120*time.Second, "job "+id(refused)+" held", func() bool { return p.jobStatus(t, id(refused)) == 5 })
	q := p.jobs(t, "q", id(refused))[0]
	if reason, _ := q["HoldReason"].(string); q["HoldReasonCode"] != float64(13) || !strings.Contains(reason, "big.dat") && !strings.Contains(reason, "big.sum") && !strings.Contains(reason, "uid.txt") {
		t.Errorf("refused upload: HoldReasonCode %v, reason %q; want 13 naming the file", q["HoldReasonCode"], reason)
	}

	eventually(t, 120*time.Second, "job "+id(toClosed)+" held", func() bool { return p.jobStatus(t, id(toClosed)) == 5 })
	q = p.jobs(t, "q", id(toClosed))[0]
	if reason, _ := q["HoldReason"].(string); q["HoldReasonCode"] != float64(13) || !strings.Contains(reason, "permission denied") {
		t.Errorf("file:// into a directory closed to the job's user: HoldReasonCode %v, reason %q; want 13, permission denied", q["HoldReasonCode"], reason)
	}
	if entries, _ := os.ReadDir(closed); len(entries) != 0 {
		t.Errorf("root wrote the job's outputs where its user may not: %v", entries)
	}
	eventually(t, 120*time.Second, "job "+id(stolen)+" held", func() bool { return p.jobStatus(t, id(stolen)) == 5 })
	q = p.jobs(t, "q", id(stolen))[0]
	if reason, _ := q["HoldReason"].(string); q["HoldReasonCode"] != float64(13) || !strings.Contains(reason, "bob_plugin.sh") {
		t.Errorf("alice's job naming bob's plugin: HoldReasonCode %v, reason %q; want 13 naming the plugin", q["HoldReasonCode"], reason)
	}
	if _, err := os.Stat(filepath.Join(adir, "got_beta.txt")); !os.IsNotExist(err) {
		t.Errorf("alice's job ran bob's plugin: %v", err)
	}

	eventually(t, 120*time.Second, "job "+id(unmoved)+" held", func() bool { return p.jobStatus(t, id(unmoved)) == 5 })
	q = p.jobs(t, "q", id(unmoved))[0]
	if reason, _ := q["HoldReason"].(string); q["HoldReasonCode"] != float64(13) || !strings.Contains(reason, "nowhere://host/y.txt") {
		t.Errorf("a URL no plugin moves: HoldReasonCode %v, reason %q; want 13 naming the URL", q["HoldReasonCode"], reason)
	}

	// The machine has run every other job: the one needing nowhere://
	// was never matched, and the analysis says what it lacks.
	if s := p.jobStatus(t, id(nowhere)); s != 1 {
		t.Errorf("the nowhere:// job has status %d, want idle", s)
	}
	out := p.must(t, "q", "-better-analyze", id(nowhere))
	if !strings.Contains(out, "HasFileTransferPluginMethods") || !strings.Contains(out, "nowhere") {
		t.Errorf("q -better-analyze does not say the job needs a nowhere:// plugin:\n%s", out)
	}
}
