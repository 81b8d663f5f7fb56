package main

import (
	"bytes"
	"strings"
	"testing"
)

// -format prints each pair's format with its conversion filled, nothing
// else, skipping a pair whose attribute the ad lacks; \n is a newline.
func TestFormatter(t *testing.T) {
	ad := `[ ClusterId = 12; ProcId = 3; Owner = "alice"; RemoteWallClockTime = 61.5; WantCheckpoint = true;
		Requirements = TARGET.Memory > 100; Args = "a b" ]`
	for _, tc := range []struct {
		pairs [][2]string
		want  string
	}{
		{[][2]string{{`%d.`, "ClusterId"}, {`%d\n`, "ProcId"}}, "12.3\n"},
		{[][2]string{{`[%-6s]`, "Owner"}, {`%5.1f`, "RemoteWallClockTime"}}, "[alice ] 61.5"},
		{[][2]string{{`%d`, "RemoteWallClockTime"}, {`/%d`, "WantCheckpoint"}, {`/%x`, "255"}}, "61/1/ff"},
		{[][2]string{{`%v|`, "Args"}, {`%V|`, "Args"}, {`%s|`, "ProcId"}}, `a b|"a b"|3|`},
		{[][2]string{{`%r`, "Requirements"}}, "TARGET.Memory > 100"},
		{[][2]string{{`<%s>`, "Missing"}, {`%d%%\t`, "ProcId * 10"}}, "30%\t"},
		{[][2]string{{`owner\n`, "Owner"}}, "owner\n"},
	} {
		var pairs [][2]string
		pairs = append(pairs, tc.pairs...)
		var b bytes.Buffer
		f, err := newFormatter(&b, pairs)
		if err != nil {
			t.Fatalf("%v: %v", tc.pairs, err)
		}
		if err := f.add(ad); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%v: %q, want %q", tc.pairs, b.String(), tc.want)
		}
	}
	for _, bad := range [][2]string{{`%d %d`, "ProcId"}, {`%q`, "ProcId"}, {`%d`, "ProcId +"}} {
		if _, err := newFormatter(&bytes.Buffer{}, [][2]string{bad}); err == nil {
			t.Errorf("-format %q %s: no error", bad[0], bad[1])
		}
	}
	if _, _, err := takeFormats([]string{"-format", "%d"}); err == nil || !strings.Contains(err.Error(), "a format and an attribute") {
		t.Errorf("-format without its attribute: %v", err)
	}
	args, pairs, err := takeFormats([]string{"-allusers", "-format", "%d\n", "ClusterId", "alice"})
	if err != nil || strings.Join(args, " ") != "-allusers alice" || len(pairs) != 1 || pairs[0] != [2]string{"%d\n", "ClusterId"} {
		t.Errorf("takeFormats: %v %v %v", args, pairs, err)
	}
}
