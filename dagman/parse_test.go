package dagman

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func names(nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// Every keyword, with splices, includes and ALL_NODES, means what it
// means to condor_dagman.
func TestParseLanguage(t *testing.T) {
	dag, err := ParseFile("testdata/all.dag", ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A", "B", "C", "S", "SP+X", "SP+Y", "SP+IN+Z", "W", "M", "F"}
	if got := names(dag.Nodes); !slices.Equal(got, want) {
		t.Fatalf("nodes %q, want %q", got, want)
	}
	n := dag.Node
	td, _ := filepath.Abs("testdata")
	if a := n("A"); a.Dir != td+"/sub" || !a.Noop || a.File != "a.sub" {
		t.Errorf("A: dir %q noop %v file %q", a.Dir, a.Noop, a.File)
	}
	if !n("B").Done || n("S").Kind != SubDAGNode || n("S").Dir != td+"/subdir" || dag.Final != n("F") || n("W").Kind != ServiceNode {
		t.Error("DONE, SUBDAG EXTERNAL DIR, FINAL or SERVICE misread")
	}
	for node, kids := range map[string][]string{"A": {"C", "SP+X"}, "B": {"C", "SP+X"}, "SP+X": {"SP+Y"}, "SP+Y": {"SP+IN+Z"}, "SP+IN+Z": {"S"}, "C": {"M"}} {
		if got := names(n(node).Children); !slices.Equal(got, kids) {
			t.Errorf("%s's children %q, want %q", node, got, kids)
		}
	}
	if x := n("SP+X"); x.Dir != td+"/spl" || x.Retries != 2 || x.Category != "big" {
		t.Errorf("spliced X: dir %q retries %d category %q", x.Dir, x.Retries, x.Category)
	}
	if y, z := n("SP+Y"), n("SP+IN+Z"); y.Category != "SP+small" || z.Retries != 0 {
		t.Errorf("spliced Y's category %q (want SP+small), Z's retries %d (want 0: ALL_NODES stays in its file)", y.Category, z.Retries)
	}
	c := n("C")
	if c.Pre == nil || c.Pre.Exe != "pre.sh" || !slices.Equal(c.Pre.Args, []string{"$JOB", "two words", `"q"`}) ||
		!c.Pre.Defer || c.Pre.DeferStatus != 4 || c.Pre.DeferTime != 30*time.Second {
		t.Errorf("C's PRE script %+v", c.Pre)
	}
	if c.Hold == nil || c.Hold.Exe != "held.sh" {
		t.Errorf("C's HOLD script %+v", c.Hold)
	}
	for _, name := range []string{"A", "B", "C", "S", "M"} {
		if p := n(name).Post; p == nil || p.Exe != "post.sh" {
			t.Errorf("ALL_NODES POST script missing on %s", name)
		}
	}
	for _, name := range []string{"SP+X", "F", "W"} {
		if n(name).Post != nil {
			t.Errorf("ALL_NODES reached %s", name)
		}
	}
	if c.Retries != 3 || c.UnlessExit == nil || *c.UnlessExit != 42 || c.Priority != 7 || c.Category != "big" ||
		c.AbortOn == nil || *c.AbortOn != (AbortOn{Value: 9, Return: 1}) || c.PreSkip == nil || *c.PreSkip != 5 {
		t.Errorf("C: %+v", c)
	}
	wantVars := []Var{{Name: "word", Value: `a "quoted" \ value`}, {Name: "late", Value: "x", Append: true}}
	if !slices.Equal(c.Vars, wantVars) {
		t.Errorf("C's VARS %+v, want %+v", c.Vars, wantVars)
	}
	if dag.MaxJobs["big"] != 2 || dag.MaxJobs["SP+small"] != 1 {
		t.Errorf("MAXJOBS %v", dag.MaxJobs)
	}
	if dag.Config != td+"/dag.config" || *dag.Dot != (DotSpec{File: td + "/dag.dot", Update: true, Include: td + "/extra.dot"}) ||
		*dag.NodeStatus != (NodeStatusSpec{File: td + "/status.txt", MinUpdate: 30 * time.Second, AlwaysUpdate: true}) {
		t.Errorf("CONFIG %q, DOT %+v, NODE_STATUS_FILE %+v", dag.Config, dag.Dot, dag.NodeStatus)
	}
}

// A bad DAG file is refused before anything runs, with the file and line
// of the problem and an error callers can test.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		line      int
		err       error
		msg       string
	}{
		{"cycle", "JOB A a\nJOB B b\nJOB C c\nPARENT A CHILD B\nPARENT B CHILD C\nPARENT C CHILD A\n", 6, ErrCycle, "A -> B -> C -> A"},
		{"self", "JOB A a\nPARENT A CHILD A\n", 2, ErrCycle, "A is its own parent"},
		{"unknown parent", "JOB A a\n\nPARENT A CHILD Q\n", 3, ErrUnknownNode, "Q"},
		{"unknown retry", "JOB A a\nRETRY B 2\n", 2, ErrUnknownNode, "B"},
		{"duplicate", "JOB A a\n# again\nJOB A b\n", 3, ErrDuplicateNode, "first defined at test.dag:1"},
		{"keyword", "JOB A a\nJOBS B b\n", 2, ErrKeyword, `"JOBS"`},
		{"retry number", "JOB A a\nRETRY A three\n", 2, ErrNumber, `"three"`},
		{"priority number", "JOB A a\nPRIORITY A 1.5\n", 2, ErrNumber, ""},
		{"negative retry", "JOB A a\nRETRY A -1\n", 2, ErrNumber, ""},
		{"abort return", "JOB A a\nABORT-DAG-ON A 1 RETURN 300\n", 2, ErrNumber, ""},
		{"no child", "JOB A a\nPARENT A\n", 2, ErrSyntax, ""},
		{"vars quotes", "JOB A a\nVARS A x='single'\n", 2, ErrSyntax, "double quotes"},
		{"vars open", "JOB A a\nVARS A x=\"open\n", 2, ErrSyntax, "closing quote"},
		{"vars queue", "JOB A a\nVARS A queue_it=\"1\"\n", 2, ErrSyntax, "queue"},
		{"reserved", "JOB PARENT a\n", 1, ErrSyntax, "reserved"},
		{"final child", "JOB A a\nFINAL F f\nPARENT A CHILD F\n", 3, ErrSyntax, "FINAL"},
		{"two finals", "FINAL F f\nFINAL G g\n", 2, ErrSyntax, "second FINAL"},
		{"script type", "JOB A a\nSCRIPT MIDDLE A x\n", 2, ErrSyntax, "PRE, POST or HOLD"},
		{"reject", "JOB A a\nREJECT\n", 2, ErrRejected, ""},
		{"not yet", "JOB A a\nJOBSTATE_LOG js.log\n", 2, ErrNotSupported, "JOBSTATE_LOG"},
		{"inline", "JOB A {\n", 1, ErrNotSupported, "inline"},
		{"continued at end", "JOB A a \\\n", 1, ErrSyntax, ""},
		{"include missing", "INCLUDE nowhere.dag\n", 1, os.ErrNotExist, "include nowhere.dag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "test.dag", ParseOptions{Dir: t.TempDir()})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, c.err) || pe.Line != c.line || pe.File != "test.dag" || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want a ParseError at test.dag:%d wrapping %v and saying %q", err, c.line, c.err, c.msg)
			}
		})
	}
}

// Errors in included and spliced files name those files and lines; an
// include loop is refused.
func TestParseErrorsInNestedFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"top.dag":   "JOB A a\nINCLUDE inc.dag\n",
		"inc.dag":   "# included\nJOB B b\nPARENT B CHILD nobody\n",
		"loop.dag":  "INCLUDE loop2.dag\n",
		"loop2.dag": "INCLUDE loop.dag\n",
		"sp.dag":    "SPLICE S s/inner.dag\n",
		"s/inner.dag": "JOB X x\n" +
			"RETRY X many\n",
	})
	for _, c := range []struct {
		file, at string
	}{
		{"top.dag", "inc.dag:3: unknown node: nobody"},
		{"loop.dag", "loop2.dag:1: syntax error: loop.dag includes itself"},
		{"sp.dag", "inner.dag:2: bad number"},
	} {
		_, err := ParseFile(filepath.Join(dir, c.file), ParseOptions{})
		if err == nil || !strings.Contains(err.Error(), c.at) {
			t.Errorf("%s: %v, want %q", c.file, err, c.at)
		}
	}
}

// The parser never panics and either returns a DAG or a ParseError.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.dag")
	spliced, _ := filepath.Glob("testdata/spl/*.dag")
	for _, name := range append(files, spliced...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("JOB A a\nPARENT A CHILD A\n"))
	f.Add([]byte("VARS A x=\"\\\\\\\"\"\n"))
	f.Add([]byte("JOB A a\nSPLICE S one.dag\nSPLICE T one.dag\nPARENT A S CHILD T\nINCLUDE self.dag\n"))
	// Included and spliced files are these, whatever their names.
	read := func(path string) ([]byte, error) {
		switch filepath.Base(path) {
		case "one.dag":
			return []byte("JOB X x\nJOB Y y\nPARENT X CHILD Y\n"), nil
		case "self.dag":
			return []byte("INCLUDE self.dag\n"), nil
		}
		return nil, os.ErrNotExist
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		dag, err := Parse(src, "fuzz.dag", ParseOptions{Dir: "/nonexistent", ReadFile: read})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File == "" {
				t.Fatalf("error %v is no ParseError naming a file", err)
			}
			return
		}
		for i, n := range dag.Nodes {
			if dag.Node(n.Name) != n || n.index != i {
				t.Fatalf("node %q is not found by its name or index", n.Name)
			}
		}
	})
}
