package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"harrier.dev/harrier/classad"
)

// drainingTable prints one line per draining machine, for status
// -draining: its slots' states (as -compact abbreviates them), since when
// it drains, and why (DrainReason).
type drainingTable struct {
	w        io.Writer
	now      int64
	machines []string
	index    map[string]*drainingMachine
}

type drainingMachine struct {
	states  []string
	running int
	since   int64
	reason  string
}

func newDrainingTable(w io.Writer) *drainingTable {
	return &drainingTable{w: w, now: time.Now().Unix(), index: map[string]*drainingMachine{}}
}

func (t *drainingTable) row(ad *classad.ClassAd) {
	name, _ := ad.EvalString("Machine")
	m := t.index[name]
	if m == nil {
		m = &drainingMachine{}
		m.since, _ = ad.EvalInt("LastDrainStartTime")
		m.reason, _ = ad.EvalString("DrainReason")
		t.index[name] = m
		t.machines = append(t.machines, name)
	}
	state, _ := ad.EvalString("State")
	act, _ := ad.EvalString("Activity")
	m.states = append(m.states, stateLetters(state, act))
	if state == "Claimed" || state == "Preempting" {
		m.running++
	}
}

func (t *drainingTable) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "Machine\tSlots\tJobs\tDraining\tST\tReason")
	for _, name := range t.machines {
		m := t.index[name]
		since := "?"
		if m.since > 0 {
			since = duration(t.now - m.since)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", name, len(m.states), m.running, since, strings.Join(m.states, ","), m.reason)
	}
	tw.Flush()
}
