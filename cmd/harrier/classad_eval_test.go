package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClassadEval(t *testing.T) {
	dir := t.TempDir()
	oldAd := filepath.Join(dir, "job.ad")
	if err := os.WriteFile(oldAd, []byte("# a job\nMemory = 2048\nOwner = \"jo\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"1 + 2", "7 / 2.0", `strcat("a", "b")`, "2 > 1", "x", "1/0", "{1, 2}", "{[a = 1]}[0]", "10.0"},
			"", "3\n3.500000000000000E+00\n\"ab\"\ntrue\nundefined\nerror\n{ 1,2 }\n[ a = 1 ]\n1.000000000000000E+01\n"},
		{[]string{"x = 1", "y = x + 1", "y * 10", "x == 1"}, "", "20\ntrue\n"},
		{[]string{"[ a = 2; b = a * a ]", "b"}, "", "4\n"},
		{[]string{"-ad", oldAd, "Memory * 2", "owner == \"JO\""}, "", "4096\ntrue\n"},
		{[]string{"-ad", "-", "Memory"}, "[ Memory = 5 ]", "5\n"},
		{[]string{"-ad", "-", "Memory + 1"}, `{"Memory": 5}`, "6\n"},
		{[]string{"-ad", "-", "Memory = 9", "Memory"}, "Memory = 5\n", "9\n"},
	} {
		var out strings.Builder
		if err := runClassadEval(tc.args, strings.NewReader(tc.stdin), &out); err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if out.String() != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.args, out.String(), tc.want)
		}
	}
	for _, args := range [][]string{{}, {"-ad"}, {"1 +"}, {"-ad", filepath.Join(dir, "missing"), "1"}} {
		if err := runClassadEval(args, strings.NewReader(""), &strings.Builder{}); err == nil {
			t.Errorf("%q succeeded", args)
		}
	}
}
