package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

// TestPrinterJSONAsBefore: ads printed one by one as they stream in make
// exactly the array json.MarshalIndent made of them all at once, which is
// what -json printed before queries streamed.
func TestPrinterJSONAsBefore(t *testing.T) {
	for _, texts := range [][]string{
		nil,
		{`[ ClusterId = 1; ProcId = 0; Owner = "alice" ]`},
		{
			`[ ClusterId = 1; ProcId = 0; Cmd = "/bin/a<b>&c"; Args = "é \"q\" \\ x"; Requirements = TARGET.Memory > 10 && Arch == "X86_64" ]`,
			`[ ClusterId = 1; ProcId = 1; L = { 1, 2.5, "x", { } }; R = [ A = 1; B = [ C = undefined ] ]; E = error; T = true ]`,
			`[ ]`,
		},
	} {
		var want []byte
		raw := make([]json.RawMessage, len(texts))
		for i, text := range texts {
			ad, err := classad.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if raw[i], err = ad.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
		want, err := json.MarshalIndent(raw, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		var got bytes.Buffer
		p := output{json: true}.printer(&got, func(w io.Writer) table { return newJobTable(w, false) })
		for _, text := range texts {
			if err := p.add(text); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.finish(); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("streamed JSON:\n%s\nwant:\n%s", got.String(), want)
		}
	}
}

func TestPrinterTable(t *testing.T) {
	var out bytes.Buffer
	p := output{}.printer(&out, func(w io.Writer) table { return newJobTable(w, false) })
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	if want := " ID OWNER SUBMITTED RUN_TIME ST PRI SIZE CMD\n\nTotal for query: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, 0 suspended\n"; out.String() != want {
		t.Errorf("empty queue:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	p = output{}.printer(&out, func(w io.Writer) table { return newJobTable(w, false) })
	for _, text := range []string{
		`[ ClusterId = 7; ProcId = 0; Owner = "alice"; JobStatus = 1; Cmd = "/bin/sleep"; Arguments = "10"; ImageSize = 2048; QDate = 0 ]`,
		`[ ClusterId = 7; ProcId = 1; Owner = "alice"; JobStatus = 5; Cmd = "/bin/sleep"; QDate = 0 ]`,
	} {
		if err := p.add(text); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 6 || strings.Join(strings.Fields(lines[1]), " ") != "7.0 alice ??? 0+00:00:00 I 0 2.0 sleep 10" ||
		lines[4] != "Total for query: 2 jobs; 0 completed, 0 removed, 1 idle, 0 running, 1 held, 0 suspended" {
		t.Errorf("table:\n%s", out.String())
	}
	if err := p.add("[ bad"); err == nil {
		t.Error("a bad ad from the agent printed without an error")
	}
}
