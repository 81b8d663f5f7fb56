package submit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

// testEnv returns an Env over a fresh submit directory holding an executable
// job.sh, a non-executable data.txt, and the extra files given as name→content.
func testEnv(t testing.TB, files map[string]string) Env {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("job.sh", "#!/bin/sh\necho hello\n", 0o755)
	write("data.txt", strings.Repeat("x", 3000), 0o644)
	for name, content := range files {
		write(name, content, 0o644)
	}
	vars := map[string]string{"HOME": "/home/alice", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C"}
	return Env{
		Dir:     dir,
		Owner:   "alice",
		Getenv:  func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Environ: []string{"HOME=/home/alice", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C"},
		Now:     time.Unix(1_800_000_000, 0),
	}
}

// jobsOf parses src and expands it in env, failing the test on error.
func jobsOf(t testing.TB, src string, env Env) []*classad.ClassAd {
	t.Helper()
	d, err := Parse([]byte(src), "job.sub", env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	ads, err := d.Jobs(42, env)
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	return ads
}

// absent marks an attribute that must not be in the ad.
const absent = "<absent>"

// checkAttrs compares attributes of ad with ClassAd source in want, after
// replacing $DIR with dir; both sides are normalised through the parser.
func checkAttrs(t *testing.T, ad *classad.ClassAd, dir string, want map[string]string) {
	t.Helper()
	for name, src := range want {
		got, ok := ad.Lookup(name)
		if src == absent {
			if ok {
				t.Errorf("%s = %v, want it absent", name, got)
			}
			continue
		}
		if !ok {
			t.Errorf("%s is missing, want %s", name, src)
			continue
		}
		w, err := classad.ParseExpr(strings.ReplaceAll(src, "$DIR", dir))
		if err != nil {
			t.Fatalf("bad expectation for %s: %v", name, err)
		}
		if got.String() != w.String() {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
}
