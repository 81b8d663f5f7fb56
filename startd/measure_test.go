package startd

import (
	"math"
	"runtime"
	"testing"
)

func TestMeasureHost(t *testing.T) {
	m, err := measureHost(t.TempDir(), newIdleMeter(defaultTerminals(), defaultConsoleDevices()))()
	if err != nil {
		t.Fatal(err)
	}
	if m.cpus != runtime.NumCPU() {
		t.Errorf("cpus %d, want %d", m.cpus, runtime.NumCPU())
	}
	if m.memoryMiB <= 0 {
		t.Errorf("memory %d MiB", m.memoryMiB)
	}
	if m.diskKiB <= 0 {
		t.Errorf("disk %d KiB", m.diskKiB)
	}
	if m.loadAvg < 0 || math.IsNaN(m.loadAvg) {
		t.Errorf("load average %v", m.loadAvg)
	}
	if m.keyboardIdle < 0 || m.consoleIdle < m.keyboardIdle {
		t.Errorf("keyboard idle %v, console idle %v", m.keyboardIdle, m.consoleIdle)
	}
	if m.arch == "" || m.opSysAndVer == "" {
		t.Errorf("arch %q, OpSysAndVer %q", m.arch, m.opSysAndVer)
	}
}

func TestMeasureHostMissingDir(t *testing.T) {
	if _, err := measureHost("/nonexistent/execute", newIdleMeter(nil, nil))(); err == nil {
		t.Error("measuring a missing execute directory succeeded")
	}
}

func TestParseLoadAvg(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0.52 0.58 0.59 1/467 12345\n", 0.52, true},
		{"12.00 1 1 1/1 1", 12, true},
		{"", 0, false},
		{"   \n", 0, false},
		{"abc 1 1", 0, false},
		{"-1 0 0", 0, false},
	} {
		got, err := parseLoadAvg([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseLoadAvg(%q) = %v, %v", c.in, got, err)
		}
	}
}

func FuzzParseLoadAvg(f *testing.F) {
	f.Add([]byte("0.52 0.58 0.59 1/467 12345\n"))
	f.Add([]byte(""))
	f.Add([]byte("NaN"))
	f.Add([]byte("1e400 0 0"))
	f.Add([]byte("inf"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseLoadAvg(b)
		if err == nil && (v < 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("parseLoadAvg(%q) = %v without error", b, v)
		}
	})
}
