package startd

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func validConfig(t *testing.T) Config {
	return Config{
		Name:           "exec1",
		TLS:            &tls.Config{},
		ClientTLS:      &tls.Config{},
		MatchmakerAddr: "127.0.0.1:9618",
		ExecuteDir:     filepath.Join(t.TempDir(), "execute"),
		StarterCommand: []string{"/bin/true"},
	}
}

func TestNewDefaults(t *testing.T) {
	cfg := validConfig(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Start != "true" || s.cfg.Rank != "0" || s.adc.policy.start.String() != "true" || s.cfg.NumSlots != 1 || s.cfg.AdvertiseInterval != 10*time.Second || s.cfg.Logger == nil {
		t.Errorf("defaults not applied: %+v", s.cfg)
	}
	if s.cfg.PollingInterval != time.Second || s.cfg.ClaimLease != time.Minute ||
		strings.Join(s.cfg.Terminals, " ") != "/dev/tty* /dev/pts/*" || strings.Join(s.cfg.ConsoleDevices, " ") != "/dev/console /dev/input/*" {
		t.Errorf("policy timing and device defaults not applied: %+v", s.cfg)
	}
	for name, e := range map[string]string{
		"SUSPEND": s.adc.policy.suspend.String(), "CONTINUE": s.adc.policy.cont.String(), "IS_OWNER": s.adc.policy.isOwner.String(),
		"WANT_VACATE": s.adc.policy.wantVacate.String(), "MaxVacateTime": s.adc.policy.maxVacateTime.String(),
	} {
		if e == "" {
			t.Errorf("%s has no default", name)
		}
	}
	if fi, err := os.Stat(cfg.ExecuteDir); err != nil || !fi.IsDir() {
		t.Errorf("execute directory not created: %v", err)
	}
	if len(s.slots) != 1 || s.slots[0].name != "slot1@exec1" {
		t.Errorf("slots %v", s.slots)
	}
}

func TestNewSlots(t *testing.T) {
	cfg := validConfig(t)
	cfg.NumSlots = 3
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, sl := range s.slots {
		if sl.id != i+1 || sl.phase.status() != (Status{Unclaimed, Idle}) {
			t.Errorf("slot %d: id %d, %s", i, sl.id, sl.phase.status())
		}
	}
	if s.slots[2].name != "slot3@exec1" {
		t.Errorf("third slot named %q", s.slots[2].name)
	}
}

// TestNewSlotTypes lays a machine out in two static slots and a
// partitionable one, in type order.
func TestNewSlotTypes(t *testing.T) {
	cfg := validConfig(t)
	cfg.NumSlots = 7 // ignored
	cfg.SlotTypes = []SlotType{{Count: 2, Share: "cpus=1, memory=1024"}, {Count: 1, Share: "50%", Partitionable: true}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, sl := range s.slots {
		kinds = append(kinds, sl.short()+" "+sl.kind.slotType())
	}
	if got := strings.Join(kinds, ", "); got != "slot1 Static, slot2 Static, slot3 Partitionable" || s.adc.numSlots != 3 {
		t.Errorf("slots %s (numSlots %d)", got, s.adc.numSlots)
	}
	m := machine{cpus: 8, memoryMiB: 16384, diskKiB: 3000}
	if got, _ := s.slots[0].view(s.slots).resources(m, s.adc.numSlots); got != (resources{1, 1024, 1000, 0}) {
		t.Errorf("static slot has %v", got)
	}
	if got, _ := s.slots[2].view(s.slots).resources(m, s.adc.numSlots); got != (resources{4, 8192, 1500, 0}) {
		t.Errorf("partitionable slot has %v", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   []string
	}{
		{"start syntax", func(c *Config) { c.Start = "KeyboardIdle > (15 *" }, []string{"START", "line 1, column 21"}},
		{"rank syntax", func(c *Config) { c.Rank = "Owner ==" }, []string{"RANK", "column"}},
		{"no TLS", func(c *Config) { c.TLS = nil }, []string{"TLS"}},
		{"no matchmaker", func(c *Config) { c.MatchmakerAddr = "" }, []string{"matchmaker"}},
		{"no execute dir", func(c *Config) { c.ExecuteDir = "" }, []string{"execute directory"}},
		{"no starter", func(c *Config) { c.StarterCommand = nil }, []string{"starter command"}},
		{"negative slots", func(c *Config) { c.NumSlots = -1 }, []string{"slots"}},
		{"tiny interval", func(c *Config) { c.AdvertiseInterval = time.Millisecond }, []string{"interval"}},
		{"two errors", func(c *Config) { c.Start = "("; c.MatchmakerAddr = "" }, []string{"START", "matchmaker"}},
		{"suspend syntax", func(c *Config) { c.Suspend = "KeyboardIdle <" }, []string{"SUSPEND: line 1, column 15"}},
		{"is_owner syntax", func(c *Config) { c.IsOwner = "START =?=" }, []string{"IS_OWNER", "column"}},
		{"polling too often", func(c *Config) { c.PollingInterval = time.Microsecond }, []string{"polling interval"}},
		{"short lease", func(c *Config) { c.ClaimLease = time.Millisecond }, []string{"claim lease"}},
		{"bad slot type", func(c *Config) { c.SlotTypes = []SlotType{{Count: 1, Share: "cpus=two"}} }, []string{`slot type "cpus=two"`}},
		{"no slot of any type", func(c *Config) { c.SlotTypes = []SlotType{{Count: 0, Share: "50%"}} }, []string{"NUM_SLOTS_TYPE"}},
		{"negative NUM_CPUS", func(c *Config) { c.NumCPUs = -2 }, []string{"NUM_CPUS"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := validConfig(t)
			c.change(&cfg)
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New accepted the configuration")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
