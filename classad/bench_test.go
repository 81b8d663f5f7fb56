package classad

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func readAd(tb testing.TB, name string) (string, *ClassAd) {
	tb.Helper()
	src, err := os.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	ad, err := Parse(string(src))
	if err != nil {
		tb.Fatalf("parse %s: %v", name, err)
	}
	return string(src), ad
}

// figure12 returns the job and machine ads of Figure 12 in the Condor and
// the Grid paper, the machine completed so that both Requirements hold.
func figure12(tb testing.TB) (job, machine *ClassAd) {
	_, job = readAd(tb, "figure12-job.ad")
	_, machine = readAd(tb, "figure12-machine.ad")
	return job, machine
}

func BenchmarkFigure12Match(b *testing.B) {
	job, machine := figure12(b)
	m := NewMatcher()
	if !m.Match(job, machine) {
		b.Fatal("Figure 12 ads do not match")
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Match(job, machine)
	}
}

func BenchmarkFigure12Rank(b *testing.B) {
	job, machine := figure12(b)
	m := NewMatcher()
	if r := m.Rank(job, machine); r != 2048*10000+100000 {
		b.Fatalf("rank %v", r)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.Rank(job, machine)
	}
}

// BenchmarkMatchFunc measures the package-level Match, which borrows an
// evaluation context from a pool.
func BenchmarkMatchFunc(b *testing.B) {
	job, machine := figure12(b)
	b.ReportAllocs()
	for b.Loop() {
		Match(job, machine)
	}
}

func BenchmarkParseFigure12Machine(b *testing.B) {
	src, _ := readAd(b, "figure12-machine.ad")
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse100Attr(b *testing.B) {
	src, _ := readAd(b, "attr100.ad")
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnparse100Attr(b *testing.B) {
	_, ad := readAd(b, "attr100.ad")
	b.ReportAllocs()
	for b.Loop() {
		_ = ad.String()
	}
}

// BenchmarkRegexpConstant measures a constant pattern, compiled once at
// parse time.
func BenchmarkRegexpConstant(b *testing.B) {
	ad, err := Parse(`[ Requirements = regexp("^nostos\\.", TARGET.Machine, "i") ]`)
	if err != nil {
		b.Fatal(err)
	}
	_, machine := figure12(b)
	m := NewMatcher()
	if !m.EvalAttr(ad, machine, "Requirements").IsTrue() {
		b.Fatal("no match")
	}
	b.ReportAllocs()
	for b.Loop() {
		m.EvalAttr(ad, machine, "Requirements")
	}
}

// BenchmarkMemberConstantList measures member() over a constant list,
// which is built once at parse time.
func BenchmarkMemberConstantList(b *testing.B) {
	ad, err := Parse(`[ Requirements = member(TARGET.Machine, { "a.cs.wisc.edu", "b.cs.wisc.edu", "nostos.cs.wisc.edu" }) ]`)
	if err != nil {
		b.Fatal(err)
	}
	_, machine := figure12(b)
	m := NewMatcher()
	if !m.EvalAttr(ad, machine, "Requirements").IsTrue() {
		b.Fatal("no match")
	}
	b.ReportAllocs()
	for b.Loop() {
		m.EvalAttr(ad, machine, "Requirements")
	}
}

// oldSyntax returns the testdata ad name in old syntax.
func oldSyntax(tb testing.TB, name string) string {
	_, ad := readAd(tb, name)
	return ad.MarshalOld()
}

func BenchmarkParseOld100Attr(b *testing.B) {
	src := oldSyntax(b, "attr100.ad")
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseOld(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseOldMachine19(b *testing.B) {
	src := oldSyntax(b, "machine19.ad")
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseOld(src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResidentMachine19 reports what a parsed 19-attribute machine ad
// keeps on the heap (B/ad), read in new and in old syntax, as a pool holding
// many ads pays it.
func BenchmarkResidentMachine19(b *testing.B) {
	newSrc, _ := readAd(b, "machine19.ad")
	oldSrc := oldSyntax(b, "machine19.ad")
	for _, tc := range []struct {
		name  string
		parse func() (*ClassAd, error)
	}{
		{"new", func() (*ClassAd, error) { return Parse(strings.Clone(newSrc)) }},
		{"old", func() (*ClassAd, error) { return ParseOld(strings.Clone(oldSrc)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const n = 2000
			ads := make([]*ClassAd, n)
			var perAd float64
			for b.Loop() {
				clear(ads)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := range ads {
					ad, err := tc.parse()
					if err != nil {
						b.Fatal(err)
					}
					ads[i] = ad
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perAd = float64(after.HeapAlloc-before.HeapAlloc) / n
			}
			runtime.KeepAlive(ads)
			b.ReportMetric(perAd, "B/ad")
		})
	}
}
