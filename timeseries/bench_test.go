package timeseries

import (
	"path/filepath"
	"testing"
	"time"
)

func fullStore() *Store {
	s := New([]string{"a", "b", "c", "d", "e", "f", "g"}, DefaultResolutions)
	values := make([]float64, 7)
	for i := range 31 * 24 * 60 {
		s.Add(t0.Add(time.Duration(i)*time.Minute), values)
	}
	return s
}

// BenchmarkAdd adds a sample a minute to full rings: each drops its
// oldest bucket.
func BenchmarkAdd(b *testing.B) {
	s := fullStore()
	values := make([]float64, 7)
	at := t0.Add(31 * 24 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(time.Minute)
		s.Add(at, values)
	}
}

// BenchmarkSaveLoad saves and loads a full history of seven series.
func BenchmarkSaveLoad(b *testing.B) {
	s := fullStore()
	path := filepath.Join(b.TempDir(), "h.json")
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Save(path); err != nil {
			b.Fatal(err)
		}
		if _, err := Load(path, s.Series(), DefaultResolutions); err != nil {
			b.Fatal(err)
		}
	}
}
