package timeseries

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func TestRingsAreBounded(t *testing.T) {
	s := New([]string{"a"}, []Resolution{{Step: time.Minute, Len: 3}, {Step: time.Hour, Len: 2}})
	for i := range 5 * 60 { // five hours, a sample a minute
		if err := s.Add(t0.Add(time.Duration(i)*time.Minute), []float64{float64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	mins := s.Points(time.Minute)
	if len(mins) != 3 {
		t.Fatalf("minute ring holds %d points, want 3", len(mins))
	}
	if want := t0.Add(297 * time.Minute); !mins[0].Time.Equal(want) || mins[2].Values[0] != 299 {
		t.Errorf("minute ring = %+v, want the last three minutes from %v", mins, want)
	}
	hours := s.Points(time.Hour)
	if len(hours) != 2 || !hours[0].Time.Equal(t0.Add(3*time.Hour)) || !hours[1].Time.Equal(t0.Add(4*time.Hour)) {
		t.Errorf("hour ring = %+v, want hours 3 and 4", hours)
	}
}

func TestCoarseRingsAverageTheSamples(t *testing.T) {
	s := New([]string{"claimed", "idle"}, DefaultResolutions)
	for i := range 60 {
		s.Add(t0.Add(time.Duration(i)*time.Minute), []float64{float64(i), 1})
	}
	hours := s.Points(time.Hour)
	if len(hours) != 1 {
		t.Fatalf("hour ring = %+v, want one bucket", hours)
	}
	if h := hours[0]; h.Samples != 60 || h.Values[0] != 29.5 || h.Values[1] != 1 {
		t.Errorf("hour bucket = %+v, want the mean of 60 samples: 29.5 and 1", h)
	}
	// Several samples in one minute make one point, their mean.
	s.Add(t0.Add(time.Hour+10*time.Second), []float64{2, 0})
	s.Add(t0.Add(time.Hour+40*time.Second), []float64{4, 0})
	mins := s.Points(time.Minute)
	if last := mins[len(mins)-1]; last.Samples != 2 || last.Values[0] != 3 {
		t.Errorf("last minute = %+v, want 2 samples of mean 3", last)
	}
}

func TestAddRefusesWrongWidth(t *testing.T) {
	s := New([]string{"a", "b"}, DefaultResolutions)
	if err := s.Add(t0, []float64{1}); err == nil {
		t.Error("a sample of one value for two series was accepted")
	}
}

func TestPointsAreCopies(t *testing.T) {
	s := New([]string{"a"}, DefaultResolutions)
	s.Add(t0, []float64{1})
	s.Points(time.Minute)[0].Values[0] = 99
	if v := s.Points(time.Minute)[0].Values[0]; v != 1 {
		t.Errorf("changing a returned point changed the store: %v", v)
	}
}

func TestSaveAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.json")
	s := New([]string{"a", "b"}, DefaultResolutions)
	for i := range 90 {
		s.Add(t0.Add(time.Duration(i)*time.Minute), []float64{float64(i), 2})
	}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	// Loaded with a series more and one fewer: b is kept, c is new.
	got, err := Load(path, []string{"b", "c"}, DefaultResolutions)
	if err != nil {
		t.Fatal(err)
	}
	mins := got.Points(time.Minute)
	if len(mins) != 90 || mins[89].Values[0] != 2 || mins[89].Values[1] != 0 || !mins[89].Time.Equal(t0.Add(89*time.Minute)) {
		t.Errorf("loaded minutes: %d points, last %+v", len(mins), mins[len(mins)-1])
	}
	if hours := got.Points(time.Hour); len(hours) != 2 || hours[0].Samples != 60 {
		t.Errorf("loaded hours = %+v", hours)
	}
	// A later sample in the last minute averages in, as before the save.
	got.Add(t0.Add(89*time.Minute+30*time.Second), []float64{4, 0})
	if last := got.Points(time.Minute)[89]; last.Samples != 2 || last.Values[0] != 3 {
		t.Errorf("after a restart, the last minute = %+v", last)
	}
	// Loaded with shorter rings: the newest points are kept.
	short, err := Load(path, []string{"a"}, []Resolution{{Step: time.Minute, Len: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if mins := short.Points(time.Minute); len(mins) != 10 || mins[9].Values[0] != 89 {
		t.Errorf("shorter ring after load = %+v", mins)
	}
}

func TestLoadMissingFileIsEmpty(t *testing.T) {
	s, err := Load(filepath.Join(t.TempDir(), "none.json"), []string{"a"}, DefaultResolutions)
	if err != nil || len(s.Points(time.Minute)) != 0 {
		t.Errorf("Load of a missing file = %v, %v; want an empty store", s.Points(time.Minute), err)
	}
}

func TestLoadCorruptFile(t *testing.T) {
	for name, text := range map[string]string{
		"truncated":    `{"version":1,"series":["a"],"rings":[{"step":60000000000,"points":[{"t":"2026-11-27T10:00:00Z","v":[1`,
		"garbage":      "\x00\x01not json",
		"version":      `{"version":7,"series":["a"],"rings":[]}`,
		"width":        `{"version":1,"series":["a"],"rings":[{"step":60000000000,"points":[{"t":"2026-11-27T10:00:00Z","v":[1,2],"n":1}]}]}`,
		"out of order": `{"version":1,"series":["a"],"rings":[{"step":60000000000,"points":[{"t":"2026-11-27T10:01:00Z","v":[1],"n":1},{"t":"2026-11-27T10:00:00Z","v":[1],"n":1}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.json")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Load(path, []string{"a"}, DefaultResolutions)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Load = %v, want ErrCorrupt", err)
			}
			if s == nil || len(s.Points(time.Minute)) != 0 {
				t.Fatal("a corrupt file did not give an empty store")
			}
			if err := s.Add(t0, []float64{1}); err != nil || len(s.Points(time.Minute)) != 1 {
				t.Errorf("the store after a corrupt file does not record: %v", err)
			}
		})
	}
}
