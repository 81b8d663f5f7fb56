package web

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/timeseries"
)

func mustAd(t *testing.T, text string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return ad
}

type fakePool struct {
	ads   map[string][]*classad.ClassAd
	users []matchmaker.UserPriority
}

func (f fakePool) Query(typ string, cons classad.Expr) []*classad.ClassAd {
	var out []*classad.ClassAd
	for _, ad := range f.ads[typ] {
		if cons.IsZero() || ad.EvalExpr(cons, nil).IsTrue() {
			out = append(out, ad)
		}
	}
	return out
}

func (f fakePool) Users() []matchmaker.UserPriority { return f.users }

type fakeQueue struct {
	jobs   []*classad.ClassAd
	events []joblog.Event
	err    error
}

func (f fakeQueue) Jobs(fn func(*classad.ClassAd) bool) {
	for _, ad := range f.jobs {
		if !fn(ad) {
			return
		}
	}
}

func (f fakeQueue) Job(c, p int) (*classad.ClassAd, bool) {
	for _, ad := range f.jobs {
		if jc, _ := ad.EvalInt("ClusterId"); int(jc) == c {
			if jp, _ := ad.EvalInt("ProcId"); int(jp) == p {
				return ad, true
			}
		}
	}
	return nil, false
}

func (f fakeQueue) JobEvents(*classad.ClassAd) ([]joblog.Event, error) { return f.events, f.err }

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

const xss = `<script>alert("x")</script>`

func testQueue(t *testing.T) fakeQueue {
	return fakeQueue{jobs: []*classad.ClassAd{
		mustAd(t, `[ ClusterId = 1; ProcId = 0; Owner = "alice"; Cmd = "/bin/sleep"; Arguments = "60"; JobStatus = 2; QDate = 1764000000; NumJobStarts = 1 ]`),
		mustAd(t, `[ ClusterId = 2; ProcId = 0; Owner = "bob"; Cmd = "/bin/true"; JobBatchName = "<script>alert(\"x\")</script>"; JobStatus = 5; HoldReason = "<b>disk</b> quota exceeded";
			RemoteIOFiles = { [ Name = "/home/bob/in.dat"; OpenCount = 1; ReadCount = 3; ReadBytes = 50000; WriteCount = 0; WriteBytes = 0; SeekCount = 2; Seconds = 0.5 ] };
			FileReadBytes = 50000; NumCkpts = 2; LastCkptTime = 1764000100; LastCkptSize = 4096; LastCkptImageSize = 8192; LastCkptFrozenTime = 0.25; LastCkptDumpTime = 0.2 ]`),
	}, events: []joblog.Event{
		{Type: joblog.Submit, Cluster: 2, Time: time.Unix(1764000000, 0), Host: "<host>"},
		{Type: joblog.Checkpointed, Cluster: 2, Time: time.Unix(1764000100, 0)},
		{Type: joblog.Held, Cluster: 2, Time: time.Unix(1764000200, 0), Reason: xss},
	}}
}

func TestQueuePagesEscapeUserText(t *testing.T) {
	h := NewQueue(testQueue(t), timeseries.New(QueueSeries, timeseries.DefaultResolutions), "agent@<h>", slog.New(slog.DiscardHandler))
	for _, target := range []string{"/", "/job/2.0"} {
		code, body := get(t, h, target)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, code, body)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<b>") {
			t.Errorf("GET %s: user text rendered as markup:\n%s", target, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
			t.Errorf("GET %s: the job's name is not shown as text", target)
		}
	}
	_, body := get(t, h, "/")
	if !strings.Contains(body, "&lt;b&gt;disk&lt;/b&gt; quota exceeded") {
		t.Error("the held job's reason is not in the job table")
	}
}

func TestQueueFilters(t *testing.T) {
	h := NewQueue(testQueue(t), timeseries.New(QueueSeries, timeseries.DefaultResolutions), "agent", slog.New(slog.DiscardHandler))
	for query, want := range map[string][]string{
		"owner=alice":   {"1.0"},
		"state=held":    {"2.0"},
		"state=Running": {"1.0"},
		"constraint=" + url.QueryEscape("NumJobStarts >= 1"): {"1.0"},
		"owner=bob&state=Running":                            nil,
		"":                                                   {"1.0", "2.0"},
	} {
		code, body := get(t, h, "/?"+query)
		if code != http.StatusOK {
			t.Fatalf("?%s: %d", query, code)
		}
		for _, id := range []string{"1.0", "2.0"} {
			listed := strings.Contains(body, `href="job/`+id+`"`)
			wanted := strings.Contains(strings.Join(want, " "), id)
			if listed != wanted {
				t.Errorf("?%s: job %s listed = %v, want %v", query, id, listed, wanted)
			}
		}
	}
	for _, query := range []string{"state=Sleeping", "constraint=" + url.QueryEscape("(((")} {
		if code, body := get(t, h, "/?"+query); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
			t.Errorf("?%s: %d, want 400 with the error shown", query, code)
		}
	}
}

func TestJobPage(t *testing.T) {
	h := NewQueue(testQueue(t), timeseries.New(QueueSeries, timeseries.DefaultResolutions), "agent", slog.New(slog.DiscardHandler))
	_, body := get(t, h, "/job/2.0")
	for _, want := range []string{"/home/bob/in.dat", "50000", "checkpoint taken", "4096 bytes stored", "Held", "Submitted"} {
		if !strings.Contains(body, want) {
			t.Errorf("job page lacks %q", want)
		}
	}
	for _, target := range []string{"/job/9.0", "/job/x", "/job/1.0.0"} {
		if code, _ := get(t, h, target); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, code)
		}
	}
	q := testQueue(t)
	q.events, q.err = nil, errors.New("read job event log: permission denied")
	_, body = get(t, NewQueue(q, timeseries.New(QueueSeries, timeseries.DefaultResolutions), "agent", slog.New(slog.DiscardHandler)), "/job/2.0")
	if !strings.Contains(body, "permission denied") {
		t.Error("an event log that cannot be read is not said so")
	}
}

func TestPagesAreReadOnly(t *testing.T) {
	h := NewQueue(testQueue(t), timeseries.New(QueueSeries, timeseries.DefaultResolutions), "agent", slog.New(slog.DiscardHandler))
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/job/1.0", strings.NewReader("x")))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

func TestPoolPages(t *testing.T) {
	pool := fakePool{ads: map[string][]*classad.ClassAd{
		matchmaker.TypeMachine: {
			mustAd(t, `[ Name = "slot1@a"; State = "Claimed"; Activity = "Busy"; Cpus = 1; Memory = 512; RemoteUser = "alice" ]`),
			mustAd(t, `[ Name = "slot2@a"; State = "Unclaimed"; Activity = "Idle"; Cpus = 1; Memory = 512 ]`),
		},
		"Scheduler": {mustAd(t, `[ Name = "agent@a"; TotalRunningJobs = 1; TotalIdleJobs = 3; TotalHeldJobs = 2 ]`)},
	}, users: []matchmaker.UserPriority{{Name: "<i>alice</i>", Priority: 0.5, Factor: 1, ResourcesUsed: 1}}}
	if got := PoolSample(pool); len(got) != len(PoolSeries) || got[0] != 1 || got[1] != 1 || got[4] != 1 || got[5] != 3 || got[6] != 2 {
		t.Errorf("PoolSample = %v for series %v", got, PoolSeries)
	}
	history := timeseries.New(PoolSeries, timeseries.DefaultResolutions)
	// Two minutes of one hour.
	hour := time.Now().Truncate(time.Hour)
	history.Add(hour, PoolSample(pool))
	history.Add(hour.Add(time.Minute), PoolSample(pool))
	h := NewPool(pool, history, "matchmaker", slog.New(slog.DiscardHandler))
	_, body := get(t, h, "/")
	if n := strings.Count(body, `<circle class="point"`); n != 2*7 {
		t.Errorf("the plots have %d points, want 14 (two buckets of seven series)", n)
	}
	if !strings.Contains(body, "&lt;i&gt;alice&lt;/i&gt;") || !strings.Contains(body, "agent@a") {
		t.Error("the overview lacks the user or the agent")
	}
	_, body = get(t, h, "/?range=month")
	if n := strings.Count(body, `<circle class="point"`); n != 7 {
		t.Errorf("the month's plots have %d points, want 7 (one hour)", n)
	}
	_, body = get(t, h, "/machines?state=Claimed")
	if !strings.Contains(body, "slot1@a") || strings.Contains(body, "slot2@a") {
		t.Error("the machine table's state filter does not select the claimed slot alone")
	}
	_, body = get(t, h, "/machines?constraint="+url.QueryEscape(`Activity == "Idle"`))
	if strings.Contains(body, "slot1@a") || !strings.Contains(body, "slot2@a") {
		t.Error("the machine table's constraint does not select the idle slot alone")
	}
}

func TestLongHistoryIsDrawnAsLines(t *testing.T) {
	history := timeseries.New(QueueSeries, timeseries.DefaultResolutions)
	now := time.Now()
	for i := maxDots; i >= 0; i-- {
		history.Add(now.Add(-time.Duration(i)*time.Minute), []float64{1, 2, 3})
	}
	_, body := get(t, NewQueue(fakeQueue{}, history, "agent", slog.New(slog.DiscardHandler)), "/")
	if strings.Contains(body, `class="point"`) {
		t.Errorf("a history of %d buckets is drawn with a dot each", maxDots+1)
	}
	if n := strings.Count(body, "<polyline"); n != 3 {
		t.Errorf("%d lines drawn, want 3", n)
	}
	if !strings.Contains(body, "Jobs over time") {
		t.Error("the plot has no title")
	}
}
