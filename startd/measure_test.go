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

func TestParseOSRelease(t *testing.T) {
	for in, want := range map[string]string{
		"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n": "Debian12",
		"ID=ubuntu\nVERSION_ID=\"22.04\"\n":                                              "Ubuntu22",
		"ID=\"rocky\"\nVERSION_ID='9.3'\n":                                               "Rocky9",
		"ID=arch\n":                                                                      "Arch",
		"VERSION_ID=1\n":                                                                 "LINUX",
		"":                                                                               "LINUX",
		"ID=../x\nVERSION_ID=1;rm\n":                                                     "X1",
	} {
		if got := parseOSRelease([]byte(in)); got != want {
			t.Errorf("parseOSRelease(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add([]byte("ID=debian\nVERSION_ID=\"12\"\n"))
	f.Add([]byte("ID=\xff\nVERSION_ID=.\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := parseOSRelease(b)
		if got == "" {
			t.Fatal("empty OpSysAndVer")
		}
		for _, r := range got {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Fatalf("parseOSRelease(%q) = %q: not alphanumeric", b, got)
			}
		}
	})
}

func TestArchName(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "X86_64", "arm64": "aarch64", "riscv64": "RISCV64"} {
		if got := archName(goarch); got != want {
			t.Errorf("archName(%q) = %q, want %q", goarch, got, want)
		}
	}
}
