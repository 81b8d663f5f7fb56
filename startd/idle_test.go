package startd

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

const procInterrupts = `           CPU0       CPU1
  0:         44          0   IO-APIC   2-edge      timer
  1:        120         31   IO-APIC   1-edge      i8042
  8:          0          0   IO-APIC   8-edge      rtc0
 12:       1000          7   IO-APIC  12-edge      i8042
 40:          5          5   PCI-MSI 327680-edge   xhci_hcd, Logitech USB Keyboard
NMI:          0          0   Non-maskable interrupts
LOC:      98765      43210   Local timer interrupts
ERR:          0
`

func TestInputInterrupts(t *testing.T) {
	if got, want := inputInterrupts([]byte(procInterrupts)), uint64(120+31+1000+7+5+5); got != want {
		t.Errorf("inputInterrupts = %d, want %d", got, want)
	}
	if got := inputInterrupts([]byte("  0: 44 IO-APIC timer\n")); got != 0 {
		t.Errorf("no input devices: %d", got)
	}
}

func FuzzInputInterrupts(f *testing.F) {
	f.Add([]byte(procInterrupts))
	f.Add([]byte(":i8042 18446744073709551615 18446744073709551615"))
	f.Add([]byte("\n:\n: mouse"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = inputInterrupts(b) // must not panic
	})
}

// touch creates path with the given access time.
func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestIdleMeter(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_000_000, 0)
	touch(t, filepath.Join(dir, "pts1"), now.Add(-30*time.Second))
	touch(t, filepath.Join(dir, "pts2"), now.Add(-90*time.Second))
	touch(t, filepath.Join(dir, "mouse"), now.Add(-300*time.Second))
	im := newIdleMeter([]string{filepath.Join(dir, "pts*")}, []string{filepath.Join(dir, "mouse")})
	count := "1: 5 i8042\n"
	im.interrupts = func() ([]byte, error) { return []byte(count), nil }

	kb, console := im.measure(now, time.Hour)
	if kb != 30*time.Second || console != 300*time.Second {
		t.Errorf("keyboard idle %v, console idle %v; want 30s, 5m0s", kb, console)
	}
	// A keyboard interrupt is console activity, which is keyboard activity;
	// it shows once the last reading is older than idleReuse.
	count = "1: 6 i8042\n"
	soon := now.Add(idleReuse / 2)
	if kb, console = im.measure(soon, time.Hour); kb != 30*time.Second+idleReuse/2 || console != 300*time.Second+idleReuse/2 {
		t.Errorf("within idleReuse of the last reading: keyboard idle %v, console idle %v", kb, console)
	}
	later := now.Add(10 * time.Second)
	if kb, console = im.measure(later, time.Hour); kb != 0 || console != 0 {
		t.Errorf("after an interrupt: keyboard idle %v, console idle %v", kb, console)
	}
	if kb, console = im.measure(later.Add(5*time.Second), time.Hour); kb != 5*time.Second || console != 5*time.Second {
		t.Errorf("5 s after an interrupt: keyboard idle %v, console idle %v", kb, console)
	}

	// Nothing watched, or nothing used since boot: idle since boot; a
	// clock behind the devices never gives a negative idle time.
	none := newIdleMeter([]string{}, []string{})
	none.interrupts = func() ([]byte, error) { return nil, os.ErrNotExist }
	if kb, console = none.measure(now, time.Hour); kb != time.Hour || console != time.Hour {
		t.Errorf("nothing watched: %v, %v", kb, console)
	}
	if kb, _ = im.measure(time.Unix(0, 0), time.Hour); kb != 0 {
		t.Errorf("devices used in the future: %v", kb)
	}
}
