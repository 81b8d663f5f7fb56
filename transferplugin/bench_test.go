package transferplugin

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkRun moves files with the shell demo plugin: all of a job's
// files of a scheme in one run (the multiple-file protocol), against a
// run per file (what a single-file plugin costs), reported per file.
func BenchmarkRun(b *testing.B) {
	plugin := writePlugin(b)
	for _, tc := range []struct {
		name         string
		files, batch int
	}{
		{"100 files, one run", 100, 100},
		{"100 files, a run each", 100, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := scratchDir(b)
			files := make([]File, tc.files)
			for i := range files {
				files[i] = File{URL: fmt.Sprintf("demo://h/f%d", i), LocalFile: filepath.Join(dir, fmt.Sprintf("f%d", i))}
			}
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < len(files); i += tc.batch {
					if _, err := Run(context.Background(), plugin, dir, nil, false, files[i:i+tc.batch]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tc.files), "ns/file")
		})
	}
}
