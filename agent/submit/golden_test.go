package submit

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden")

// TestGolden expands each testdata/golden/*.sub and compares the ads with
// the .golden file beside it: old-syntax ads separated by blank lines, with
// the submit directory written as $DIR and the machine's Arch as $ARCH.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.sub")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden submit files: %v", err)
	}
	dir, err := filepath.Abs("testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Dir: dir, Owner: "alice", Now: time.Unix(1_800_000_000, 0),
		Getenv: func(k string) (string, bool) { return "/home/alice", k == "HOME" },
		Rand:   func(n int) int { return n / 2 }}
	arch, _ := submitPlatform()
	placeholders := strings.NewReplacer(dir, "$DIR", `"`+arch+`"`, `"$ARCH"`)
	values := strings.NewReplacer("$DIR", dir, `"$ARCH"`, `"`+arch+`"`)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(src, filepath.Base(file), env)
			if err != nil {
				t.Fatal(err)
			}
			ads, err := d.Jobs(7, env)
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".sub") + ".golden"
			if *update {
				var b strings.Builder
				for i, ad := range ads {
					if i > 0 {
						b.WriteString("\n")
					}
					b.WriteString(placeholders.Replace(ad.MarshalOld()))
				}
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			blocks := strings.Split(values.Replace(string(want)), "\n\n")
			if len(blocks) != len(ads) {
				t.Fatalf("%d ads, golden file has %d", len(ads), len(blocks))
			}
			for i, block := range blocks {
				w, err := classad.ParseOld(block)
				if err != nil {
					t.Fatalf("golden ad %d: %v", i, err)
				}
				compareAds(t, i, ads[i], w)
			}
		})
	}
}

// compareAds reports differences between got and want, attribute by
// attribute and in order.
func compareAds(t *testing.T, i int, got, want *classad.ClassAd) {
	t.Helper()
	gn, wn := got.Names(), want.Names()
	if strings.Join(gn, " ") != strings.Join(wn, " ") {
		t.Errorf("ad %d attributes:\n got %v\nwant %v", i, gn, wn)
	}
	for _, n := range wn {
		we, _ := want.Lookup(n)
		ge, ok := got.Lookup(n)
		if !ok || ge.String() != we.String() {
			t.Errorf("ad %d: %s = %v, want %v", i, n, ge, we)
		}
	}
}
