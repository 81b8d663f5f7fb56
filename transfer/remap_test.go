package transfer

import "testing"

func TestOutputRemaps(t *testing.T) {
	if OutputRemaps("", true) != nil || OutputRemaps("a = b", false) != nil {
		t.Error("a renaming with nothing to rename")
	}
	rename := OutputRemaps("out = results/out.txt; res/ = all ; x=y", true)
	for in, want := range map[string]string{
		"out": "results/out.txt", "res": "all", "res/a/b": "all/a/b", "x": "y", "other": "other", "outer": "outer",
	} {
		if got := rename(in); got != want {
			t.Errorf("rename(%q) = %q, want %q", in, got, want)
		}
	}
}
