package classad

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden prints every testdata/*.ad in new, old and JSON syntax and
// compares with testdata/*.golden; go test -update rewrites them. Each
// printed form must also read back to the same ad.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.ad")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.ad: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ad, err := Parse(string(src))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		js, err := ad.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(file, ".ad")
		for _, out := range []struct {
			suffix, text string
			read         func(string) (*ClassAd, error)
		}{
			{".new.golden", ad.String() + "\n", Parse},
			{".old.golden", ad.MarshalOld(), ParseOld},
			{".json.golden", string(js) + "\n", func(s string) (*ClassAd, error) {
				a := New()
				return a, a.UnmarshalJSON([]byte(s))
			}},
		} {
			golden := base + out.suffix
			if *update {
				if err := os.WriteFile(golden, []byte(out.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if out.text != string(want) {
				t.Errorf("%s differs:\n got %s\nwant %s", golden, out.text, want)
			}
			back, err := out.read(out.text)
			if err != nil {
				t.Errorf("%s does not read back: %v", golden, err)
			} else if back.String() != ad.String() {
				t.Errorf("%s reads back as %s", golden, back)
			}
		}
	}
}
