package web

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"harrier.dev/harrier/timeseries"
)

// A plot is a line chart of some series of a history, laid out for the
// SVG of the plot template: every coordinate is computed here, so the
// template only writes numbers and names.
type plot struct {
	Title         string
	Width, Height int
	Left, Bottom  int // the plotting area's left and bottom edges
	Right, Top    int
	Lines         []line
	YTicks        []tick
	XTicks        []tick
	Empty         bool
}

// A line is one series: its polyline and a dot per bucket, each titled
// with its time and value (a browser shows the title on hover).
type line struct {
	Name, Color string
	Points      string
	Dots        []dot
}

type dot struct {
	X, Y  float64
	Title string
}

type tick struct {
	At    float64
	Label string
}

// plotColors are the lines' colours, in the order of a plot's series.
var plotColors = []string{"#1b6ac9", "#2e9b3a", "#c98a1b", "#b8332f", "#7a4fb0"}

// maxDots is the most buckets a plot marks each with a dot (which names
// its time and value on hover); a longer history is drawn as lines only,
// which keeps a full day's page a tenth of the size.
const maxDots = 240

// minBuckets is the fewest buckets a plot's time axis spans, so that a
// short history is not stretched over the whole width.
const minBuckets = 30

// newPlot lays out the series named names (of the history's series
// all) over points, buckets of step each, from the oldest bucket (or
// minBuckets before now) to now.
func newPlot(title string, points []timeseries.Point, all, names []string, now time.Time, step time.Duration) plot {
	p := plot{Title: title, Width: 720, Height: 220, Left: 48, Right: 700, Top: 12, Bottom: 190}
	if len(points) == 0 {
		p.Empty = true
		return p
	}
	from := now.Add(-minBuckets * step)
	if points[0].Time.Before(from) {
		from = points[0].Time
	}
	width := now.Sub(from).Seconds()
	ymax := 1.0
	for _, pt := range points {
		for _, name := range names {
			if i := slices.Index(all, name); i >= 0 {
				ymax = math.Max(ymax, pt.Values[i])
			}
		}
	}
	ymax = niceCeil(ymax)
	x := func(t time.Time) float64 {
		return round1(float64(p.Left) + t.Sub(from).Seconds()/width*float64(p.Right-p.Left))
	}
	y := func(v float64) float64 {
		return round1(float64(p.Bottom) - v/ymax*float64(p.Bottom-p.Top))
	}
	for k, name := range names {
		i := slices.Index(all, name)
		if i < 0 {
			continue
		}
		l := line{Name: name, Color: plotColors[k%len(plotColors)]}
		var b strings.Builder
		for _, pt := range points {
			d := dot{X: x(pt.Time), Y: y(pt.Values[i])}
			b.WriteString(strconv.FormatFloat(d.X, 'f', -1, 64))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(d.Y, 'f', -1, 64))
			b.WriteByte(' ')
			if len(points) <= maxDots {
				d.Title = fmt.Sprintf("%s %s: %s", pt.Time.Local().Format("2006-01-02 15:04"), name, strconv.FormatFloat(math.Round(pt.Values[i]*100)/100, 'f', -1, 64))
				l.Dots = append(l.Dots, d)
			}
		}
		l.Points = strings.TrimSpace(b.String())
		p.Lines = append(p.Lines, l)
	}
	for i := 0; i <= 4; i++ {
		v := ymax * float64(i) / 4
		p.YTicks = append(p.YTicks, tick{At: y(v), Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	layout := "15:04"
	if width > 2*24*3600 {
		layout = "Jan 2"
	}
	for i := 0; i <= 4; i++ {
		t := from.Add(time.Duration(float64(now.Sub(from)) * float64(i) / 4))
		p.XTicks = append(p.XTicks, tick{At: x(t), Label: t.Local().Format(layout)})
	}
	return p
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, for the y axis.
func niceCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
