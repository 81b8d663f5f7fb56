// Package timeseries keeps a daemon's own history of a few figures (slots
// by state, jobs by state) in bounded memory: one ring buffer per
// resolution, each a fixed number of buckets, each bucket the mean of the
// samples that fell in it. A sample goes into every ring, so the coarse
// rings are the fine ones downsampled, and the oldest bucket of a full
// ring is dropped for the newest. A Store is saved whole to one small
// file, replaced atomically, so that a restarted daemon keeps its history.
//
// A Store is safe for concurrent use.
package timeseries

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"harrier.dev/harrier/atomicfile"
)

// A Resolution is one ring: buckets of Step each, Len of them at most.
type Resolution struct {
	Step time.Duration
	Len  int
}

// DefaultResolutions keep a day by the minute and a month by the hour,
// as CondorView's day and month views.
var DefaultResolutions = []Resolution{{Step: time.Minute, Len: 24 * 60}, {Step: time.Hour, Len: 31 * 24}}

// A Point is one bucket: the mean of Samples samples of each series, in
// the order of the Store's series, for the bucket that starts at Time.
type Point struct {
	Time    time.Time `json:"t"`
	Values  []float64 `json:"v"`
	Samples int       `json:"n"`
}

// ring holds a resolution's buckets, oldest first.
type ring struct {
	res    Resolution
	points []Point
}

func (r *ring) add(t time.Time, values []float64) {
	start := t.Truncate(r.res.Step)
	if n := len(r.points); n > 0 {
		last := &r.points[n-1]
		if last.Time.Equal(start) {
			// A running mean: the bucket holds its samples' average.
			k := float64(last.Samples)
			for i, v := range values {
				last.Values[i] = (last.Values[i]*k + v) / (k + 1)
			}
			last.Samples++
			return
		}
		if start.Before(last.Time) {
			return // the clock went back: keep the ring ordered
		}
	}
	if len(r.points) == r.res.Len {
		// Shift rather than index circularly: rings are small, samples
		// rare (one a few seconds), and reads then need no unrolling.
		copy(r.points, r.points[1:])
		r.points = r.points[:len(r.points)-1]
	}
	r.points = append(r.points, Point{Time: start, Values: slices.Clone(values), Samples: 1})
}

// A Store is the history of the named series at its resolutions.
type Store struct {
	series []string

	mu    sync.Mutex // guards rings
	rings []ring
}

// New returns an empty Store of the named series at the given
// resolutions, finest first.
func New(series []string, res []Resolution) *Store {
	s := &Store{series: slices.Clone(series)}
	for _, r := range res {
		s.rings = append(s.rings, ring{res: r})
	}
	return s
}

// Series names the Store's series, in the order of a Point's values.
func (s *Store) Series() []string { return slices.Clone(s.series) }

// Resolutions returns the Store's resolutions, finest first.
func (s *Store) Resolutions() []Resolution {
	out := make([]Resolution, len(s.rings))
	for i, r := range s.rings {
		out[i] = r.res
	}
	return out
}

// Add records a sample taken at t: values[i] is series i's. A sample
// with a different number of values is refused.
func (s *Store) Add(t time.Time, values []float64) error {
	if len(values) != len(s.series) {
		return fmt.Errorf("timeseries: %d values for %d series", len(values), len(s.series))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.rings {
		s.rings[i].add(t, values)
	}
	return nil
}

// Points returns a copy of the buckets at resolution step, oldest first;
// none if the Store has no such resolution.
func (s *Store) Points(step time.Duration) []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rings {
		if r.res.Step == step {
			out := make([]Point, len(r.points))
			for i, p := range r.points {
				out[i] = Point{Time: p.Time, Values: slices.Clone(p.Values), Samples: p.Samples}
			}
			return out
		}
	}
	return nil
}

// file is the saved form of a Store.
type file struct {
	Version int        `json:"version"`
	Series  []string   `json:"series"`
	Rings   []fileRing `json:"rings"`
}

type fileRing struct {
	Step   time.Duration `json:"step"`
	Points []Point       `json:"points"`
}

const fileVersion = 1

// Save writes the Store to path, replacing it atomically.
func (s *Store) Save(path string) error {
	f := file{Version: fileVersion, Series: s.series}
	s.mu.Lock()
	for _, r := range s.rings {
		f.Rings = append(f.Rings, fileRing{Step: r.res.Step, Points: r.points})
	}
	data, err := json.Marshal(f)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("timeseries: save %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("timeseries: save: %w", err)
	}
	return nil
}

// ErrCorrupt reports a history file that cannot be read back.
var ErrCorrupt = errors.New("timeseries: corrupt history file")

// Load returns the Store saved at path, of the named series at the given
// resolutions. A missing file gives an empty Store. So does a file that
// does not parse, or holds points out of order or of the wrong width,
// but with an error that wraps ErrCorrupt and names the file: the daemon
// logs it and starts a new history rather than failing. A saved series
// or resolution that is no longer asked for is dropped, a new one starts
// empty (a new series is zero in the old points).
func Load(path string, series []string, res []Resolution) (*Store, error) {
	s := New(series, res)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("timeseries: load: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return s, fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	if f.Version != fileVersion {
		return s, fmt.Errorf("%w %s: version %d, want %d", ErrCorrupt, path, f.Version, fileVersion)
	}
	// Where each wanted series is in the saved points, or -1.
	from := make([]int, len(series))
	for i, name := range series {
		from[i] = slices.Index(f.Series, name)
	}
	rings := make([]ring, len(s.rings))
	copy(rings, s.rings)
	for _, fr := range f.Rings {
		i := slices.IndexFunc(rings, func(r ring) bool { return r.res.Step == fr.Step })
		if i < 0 {
			continue
		}
		r := &rings[i]
		for j, p := range fr.Points {
			if len(p.Values) != len(f.Series) || p.Samples < 1 || (j > 0 && !fr.Points[j-1].Time.Before(p.Time)) {
				return New(series, res), fmt.Errorf("%w %s: bad point %d at resolution %v", ErrCorrupt, path, j, fr.Step)
			}
			values := make([]float64, len(series))
			for k, at := range from {
				if at >= 0 {
					values[k] = p.Values[at]
				}
			}
			r.points = append(r.points, Point{Time: p.Time, Values: values, Samples: p.Samples})
		}
		if n := len(r.points) - r.res.Len; n > 0 {
			r.points = r.points[n:] // the ring got shorter
		}
	}
	s.rings = rings
	return s, nil
}
