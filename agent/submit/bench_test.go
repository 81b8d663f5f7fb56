package submit

import (
	"fmt"
	"strings"
	"testing"
)

// benchSrc is a typical description: a few macros, per-job file names and a
// custom attribute.
const benchSrc = `universe = vanilla
executable = job.sh
arguments = -n $(Process) -seed $(Cluster)
input = data.txt
output = out/$(Cluster).$(Process).out
error = out/$(Cluster).$(Process).err
log = job.log
requirements = HasDocker =!= true
request_memory = 1GB
request_disk = 100M
+Project = "bench"
queue 100000
`

// BenchmarkJobs100k expands one cluster of 100,000 jobs, the submission size
// of the agent's throughput target.
func BenchmarkJobs100k(b *testing.B) {
	env := testEnv(b, nil)
	d, err := Parse([]byte(benchSrc), "bench.sub", env)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ads, err := d.Jobs(1, env)
		if err != nil || len(ads) != 100000 {
			b.Fatalf("Jobs: %d ads, %v", len(ads), err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	env := testEnv(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse([]byte(benchSrc), "bench.sub", env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobsFromRows expands 10,000 jobs whose input, arguments and
// environment all come from the rows of an items file, so that every job
// differs in most commands.
func BenchmarkJobsFromRows(b *testing.B) {
	var rows strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&rows, "in%05d.dat %d -seed %d\n", i, i%7, i*31)
	}
	env := testEnv(b, map[string]string{"rows.txt": rows.String()})
	d, err := Parse([]byte(`executable = job.sh
input = $(file)
arguments = -level $(level) $(rest)
environment = "ROW=$(Row) FILE=$(file)"
request_memory = $INT(level) GB
output = $Fn(file).out
queue file, level, rest from rows.txt
`), "rows.sub", env)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ads, err := d.Jobs(1, env)
		if err != nil || len(ads) != 10000 {
			b.Fatalf("Jobs: %d ads, %v", len(ads), err)
		}
	}
}
