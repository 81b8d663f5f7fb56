package main

import (
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/config"
	"harrier.dev/harrier/master"
)

// A master's ad names each daemon's attributes after it, made a valid
// attribute name.
func TestMasterAd(t *testing.T) {
	start := time.Unix(1700000000, 0)
	ad := masterAd("vm-2", 42, start, []master.DaemonStatus{
		{Name: "agent", Pid: 7, Started: start, Restarts: 2},
		{Name: "vm-2", Started: start, Restarts: 1, Off: true},
	})
	for attr, want := range map[string]int64{"MasterPid": 42, "DaemonStartTime": 1700000000, "agent_Pid": 7, "agent_Restarts": 2, "vm_2_Pid": 0, "vm_2_Restarts": 1, "Restarts": 3} {
		if got, ok := ad.EvalInt(attr); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", attr, got, ok, want)
		}
	}
	if off, _ := ad.EvalBool("vm_2_Off"); !off {
		t.Error("vm_2_Off is not true")
	}
	if list, _ := ad.EvalString("DaemonList"); list != "agent, vm-2" {
		t.Errorf("DaemonList = %q", list)
	}
	if got := attrName("2nd-host.example"); got != "_nd_host_example" {
		t.Errorf("attrName: %q", got)
	}
}

// changedKeys compares expanded values, so a change to a macro shows in
// every key that uses it, and finds keys added and removed.
func TestChangedKeys(t *testing.T) {
	parse := func(src string) *config.Config {
		c, err := config.Parse(strings.NewReader(src), "pool.conf", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := parse("IDLE = 60\nSTART = KeyboardIdle > $(IDLE)\nGONE = 1\nSAME = x\n")
	next := parse("IDLE = 90\nSTART = KeyboardIdle > $(IDLE)\nNEW = 1\nSAME = x\n")
	if got := strings.Join(changedKeys(old, next), " "); got != "gone idle new start" {
		t.Errorf("changed %q", got)
	}
	if used := old.Used(); len(used) != 0 {
		t.Errorf("comparing used %v", used)
	}
}
