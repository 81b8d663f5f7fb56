package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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
		p := output{json: true}.printer(&got, func(w io.Writer) table { return newJobTable(w, false, runTimes{}) })
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
	p := output{}.printer(&out, func(w io.Writer) table { return newJobTable(w, false, runTimes{}) })
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	if want := " ID OWNER SUBMITTED RUN_TIME ST PRI SIZE CMD\n\nTotal for query: 0 jobs; 0 completed, 0 removed, 0 idle, 0 running, 0 held, 0 suspended\n"; out.String() != want {
		t.Errorf("empty queue:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	p = output{}.printer(&out, func(w io.Writer) table { return newJobTable(w, false, runTimes{}) })
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

// TestBatchTable: batches by owner and JobBatchName or cluster, with done
// counted from TotalSubmitProcs, and the HOLD column only when needed.
func TestBatchTable(t *testing.T) {
	var out bytes.Buffer
	p := output{}.printer(&out, func(w io.Writer) table { return newBatchTable(w) })
	for _, text := range []string{
		`[ ClusterId = 3; ProcId = 1; Owner = "alice"; JobStatus = 2; QDate = 0; TotalSubmitProcs = 4 ]`,
		`[ ClusterId = 3; ProcId = 3; Owner = "alice"; JobStatus = 1; QDate = 0; TotalSubmitProcs = 4 ]`,
		`[ ClusterId = 4; ProcId = 0; Owner = "alice"; JobStatus = 1; QDate = 0; JobBatchName = "b" ]`,
		`[ ClusterId = 5; ProcId = 2; Owner = "alice"; JobStatus = 4; QDate = 0; JobBatchName = "b"; TotalSubmitProcs = 3 ]`,
		`[ ClusterId = 5; ProcId = 0; Owner = "bob"; JobStatus = 1; QDate = 0; JobBatchName = "b" ]`,
	} {
		if err := p.add(text); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"OWNER BATCH_NAME SUBMITTED DONE RUN IDLE TOTAL JOB_IDS",
		"alice ID: 3 ??? 2 1 1 4 3.1-3",
		"alice b ??? 3 _ 1 4 4.0 ... 5.2", // cluster 4: 1 queued; cluster 5: 2 gone, 1 completed in the queue
		"bob b ??? _ _ 1 1 5.0",
		"",
		"Total for query: 5 jobs; 1 completed, 0 removed, 3 idle, 1 running, 0 held, 0 suspended",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("batch table:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAutoformatter: -af's qualifiers, and its refusals.
func TestAutoformatter(t *testing.T) {
	ad := `[ ClusterId = 7; ProcId = 2; Owner = "alice"; RequestMemory = 64 ]`
	for _, tc := range []struct{ opts, want string }{
		{"", "alice 64\n"},
		{"j", "7.2 alice 64\n"},
		{"V", "\"alice\" 64\n"},
		{",", "alice,64\n"},
		{"t", "alice\t64\n"},
		{"l", "Owner = alice RequestMemory = 64\n"},
		{"n", "alice\n64\n"},
		{"g", "alice64\n\n"},
		{"r", "\"alice\" 64\n"},
		{"lrng", "Owner = \"alice\"\nRequestMemory = 64\n\n"},
		{"jh", "ID  Owner RequestMemory\n7.2 alice 64\n"},
	} {
		var out bytes.Buffer
		f, err := newAutoformatter(&out, tc.opts, []string{"Owner", "RequestMemory"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.add(ad); err != nil {
			t.Fatal(err)
		}
		f.finish()
		if out.String() != tc.want {
			t.Errorf("-af:%s: %q, want %q", tc.opts, out.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		opts string
		args []string
		jobs bool
	}{{"T", []string{"Owner"}, true}, {"lh", []string{"Owner"}, true}, {"n,", []string{"Owner"}, true},
		{"j", []string{"Name"}, false}, {"", nil, true}, {"", []string{"(x"}, true}} {
		if _, err := newAutoformatter(io.Discard, tc.opts, tc.args, tc.jobs); err == nil {
			t.Errorf("-af:%s %v accepted", tc.opts, tc.args)
		}
	}
	args, opts, found := takeAutoformat([]string{"-af:jh", "Owner", "-autoformat:t", "--", "-af:x"})
	if !found || opts != "jht" || strings.Join(args, " ") != "-af Owner -af -- -af:x" {
		t.Errorf("takeAutoformat: %v %q %v", args, opts, found)
	}
}

// TestExitConditions: watch-q's -exit language.
func TestExitConditions(t *testing.T) {
	jobs := map[[2]int64]*watchedJob{{1, 0}: {status: 0}, {1, 1}: {status: 5}, {1, 2}: {status: 1}}
	for s, want := range map[string]bool{
		"all,done": false, "any,done": true, "none,done": false, "any,held": true, "all,active": false,
		"none,running": false, "any,idle,3": true,
	} {
		c, err := parseExitCondition(s)
		if s == "none,running" {
			if err == nil {
				t.Errorf("-exit %s accepted", s)
			}
			continue
		}
		if err != nil {
			t.Fatalf("-exit %s: %v", s, err)
		}
		if got := c.met(jobs); got != want {
			t.Errorf("-exit %s: %v, want %v", s, got, want)
		}
	}
	if c, _ := parseExitCondition("any,held,3"); c.code != 3 {
		t.Errorf("exit code %d", c.code)
	}
	for _, bad := range []string{"all", "all,done,x", "all,done,300", "all,done,0,1"} {
		if _, err := parseExitCondition(bad); err == nil {
			t.Errorf("-exit %s accepted", bad)
		}
	}
}

// BenchmarkTables prints a queue of 10,000 jobs in 100 clusters as the
// batch view, the job view and the summary alone: the batch view keeps
// one aggregate per batch, the job view a line per job.
func BenchmarkTables(b *testing.B) {
	texts := make([]string, 10000)
	for i := range texts {
		texts[i] = fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; Owner = "alice"; JobStatus = %d; QDate = 1795779665; Cmd = "/bin/sleep"; Arguments = "60"; TotalSubmitProcs = 100; ImageSize = 1000 ]`,
			i/100, i%100, 1+i%2)
	}
	for _, tc := range []struct {
		name     string
		newTable func(io.Writer) table
	}{
		{"batch", func(w io.Writer) table { return newBatchTable(w) }},
		{"nobatch", func(w io.Writer) table { return newJobTable(w, false, runTimes{}) }},
		{"totals", func(w io.Writer) table { return &totalsTable{w: w} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := output{}.printer(io.Discard, tc.newTable)
				for _, text := range texts {
					if err := p.add(text); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
