package web

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/timeseries"
)

// A Pool is what the pool's pages read of the matchmaker: its ads and its
// accountant's priorities (*matchmaker.Matchmaker).
type Pool interface {
	Query(typ string, constraint classad.Expr) []*classad.ClassAd
	Users() []matchmaker.UserPriority
}

// PoolSeries are the series of the pool's history: slots by state, and
// the jobs the agents advertise, by state.
var PoolSeries = []string{"claimed", "unclaimed", "owner", "drained", "running", "idle", "held"}

// slotStates are the machine states the pool's pages count and filter
// by, as harrier status names them, with their history series.
var slotStates = []struct{ State, Series string }{
	{"Claimed", "claimed"}, {"Unclaimed", "unclaimed"}, {"Owner", "owner"}, {"Drained", "drained"},
	{"Matched", ""}, {"Preempting", ""},
}

// PoolSample counts the pool's slots by state and its agents' jobs by
// state, as the values of PoolSeries.
func PoolSample(p Pool) []float64 {
	values := make([]float64, len(PoolSeries))
	add := func(series string, n float64) {
		if i := slices.Index(PoolSeries, series); i >= 0 {
			values[i] += n
		}
	}
	for _, ad := range p.Query(matchmaker.TypeMachine, classad.Expr{}) {
		state, _ := ad.EvalString("State")
		for _, s := range slotStates {
			if s.State == state {
				add(s.Series, 1)
			}
		}
	}
	for _, a := range agentRows(p) {
		add("running", float64(a.Running))
		add("idle", float64(a.Idle))
		add("held", float64(a.Held))
	}
	return values
}

type poolPages struct {
	pool     Pool
	history  *timeseries.Store
	name     string
	logger   *slog.Logger
	overview *template.Template
	machines *template.Template
}

// NewPool returns the handler of the matchmaker's pages: the pool's
// history, its slots now, users and agents at /, and the slots at
// /machines, filtered by the query parameters state and constraint. name
// names the matchmaker; history has PoolSeries.
func NewPool(pool Pool, history *timeseries.Store, name string, logger *slog.Logger) http.Handler {
	p := &poolPages{pool: pool, history: history, name: name, logger: logger,
		overview: parsePage("pool.html"), machines: parsePage("machines.html")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveOverview)
	mux.HandleFunc("GET /machines", p.serveMachines)
	return mux
}

func (p *poolPages) page(title string) page {
	return page{Title: title, Daemon: p.name, Now: time.Now(),
		Nav: []link{{"/", "Pool"}, {"/machines", "Machines"}}}
}

type slotCount struct {
	Name  string
	Count int
}

type agentRow struct {
	Name                string
	Running, Idle, Held int64
}

func agentRows(p Pool) []agentRow {
	var rows []agentRow
	for _, ad := range p.Query("Scheduler", classad.Expr{}) {
		var r agentRow
		r.Name, _ = ad.EvalString("Name")
		r.Running, _ = ad.EvalInt("TotalRunningJobs")
		r.Idle, _ = ad.EvalInt("TotalIdleJobs")
		r.Held, _ = ad.EvalInt("TotalHeldJobs")
		rows = append(rows, r)
	}
	return rows
}

func (p *poolPages) serveOverview(w http.ResponseWriter, r *http.Request) {
	sp, ranges := pickSpan(r, p.history)
	points, now := p.history.Points(sp.Step), time.Now()
	data := struct {
		page
		Plots  []plot
		Slots  []slotCount
		Users  []matchmaker.UserPriority
		Agents []agentRow
	}{page: p.page("Pool"), Users: p.pool.Users(), Agents: agentRows(p.pool)}
	data.Ranges = ranges
	data.Plots = []plot{
		newPlot("Slots over time", points, PoolSeries, []string{"claimed", "unclaimed", "owner", "drained"}, now, sp.Step),
		newPlot("Jobs over time", points, PoolSeries, []string{"running", "idle", "held"}, now, sp.Step),
	}
	counts := map[string]int{}
	for _, ad := range p.pool.Query(matchmaker.TypeMachine, classad.Expr{}) {
		state, _ := ad.EvalString("State")
		counts[state]++
	}
	for _, s := range slotStates {
		data.Slots = append(data.Slots, slotCount{s.State, counts[s.State]})
	}
	render(w, p.logger, p.overview, http.StatusOK, data)
}

// machineRow is a slot as the machine table shows it.
type machineRow struct {
	Name, State, Activity, User, Since string
	Cpus, Memory                       int64
	LoadAvg                            string
}

func (p *poolPages) serveMachines(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := struct {
		page
		Filter   struct{ State, Constraint string }
		States   []string
		Machines []machineRow
	}{page: p.page("Machines")}
	data.Filter.State, data.Filter.Constraint = q.Get("state"), q.Get("constraint")
	for _, s := range slotStates {
		data.States = append(data.States, s.State)
	}
	cons, err := joinConstraint(data.Filter.Constraint, "State", data.Filter.State)
	if err != nil {
		data.Error = err.Error()
		render(w, p.logger, p.machines, http.StatusBadRequest, data)
		return
	}
	for _, ad := range p.pool.Query(matchmaker.TypeMachine, cons) {
		var m machineRow
		m.Name, _ = ad.EvalString("Name")
		m.State, _ = ad.EvalString("State")
		m.Activity, _ = ad.EvalString("Activity")
		m.Cpus, _ = ad.EvalInt("Cpus")
		m.Memory, _ = ad.EvalInt("Memory")
		if load, ok := ad.EvalReal("LoadAvg"); ok {
			m.LoadAvg = strconv.FormatFloat(load, 'f', 2, 64)
		}
		if m.User, _ = ad.EvalString("RemoteUser"); m.User == "" {
			m.User, _ = ad.EvalString("RemoteOwner")
		}
		since, _ := ad.EvalInt("EnteredCurrentState")
		m.Since = unixTime(since)
		data.Machines = append(data.Machines, m)
	}
	render(w, p.logger, p.machines, http.StatusOK, data)
}

// joinConstraint parses a constraint from a query parameter, joined with
// attr == value if value is set; the zero Expr if neither is.
func joinConstraint(constraint, attr, value string) (classad.Expr, error) {
	var parts []string
	if strings.TrimSpace(constraint) != "" {
		parts = append(parts, "("+constraint+")")
	}
	if value != "" {
		parts = append(parts, attr+" == "+classad.String(value).String())
	}
	if len(parts) == 0 {
		return classad.Expr{}, nil
	}
	e, err := classad.ParseExpr(strings.Join(parts, " && "))
	if err != nil {
		return classad.Expr{}, fmt.Errorf("constraint: %w", err)
	}
	return e, nil
}
