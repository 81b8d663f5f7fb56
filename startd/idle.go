package startd

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// idleMeter tells how long ago someone used the machine, the way HTCondor's
// startd does: by the access times of terminal devices (a shell reading
// what its user types moves the atime of its tty or pty) and of the
// console's devices, and by counting keyboard and mouse interrupts.
//
// The kernel updates a tty's access time at most once per 8-second window
// (so that the exact timing of keystrokes does not leak), so the first
// keystroke after a quiet spell is seen at once but continuous typing can
// make the terminal look up to 8 s idle. Policies should count the keyboard
// as busy for longer than that.
type idleMeter struct {
	terminals []string // glob patterns
	console   []string // glob patterns
	// interrupts reads /proc/interrupts.
	interrupts func() ([]byte, error)

	mu sync.Mutex
	// lastCount and lastChange track the keyboard and mouse interrupt
	// count: a change since the previous reading is activity now.
	lastCount  uint64
	lastChange time.Time
	seen       bool
	// The last reading of the devices, at readAt: when the keyboard and
	// the console were last used.
	readAt                    time.Time
	keyboardLast, consoleLast time.Time
}

// idleReuse is how long a reading of the devices serves further
// measurements. A busy startd measures for every claim, activation and ad
// (several times per job); reading every terminal's access time each time
// cost a third of its CPU, and the kernel updates those only every 8 s.
const idleReuse = 250 * time.Millisecond

func newIdleMeter(terminals, console []string) *idleMeter {
	return &idleMeter{
		terminals:  terminals,
		console:    console,
		interrupts: func() ([]byte, error) { return os.ReadFile("/proc/interrupts") },
	}
}

// measure returns the keyboard idle time (terminals and console) and the
// console idle time at now. Activity never seen counts as idle since boot.
func (im *idleMeter) measure(now time.Time, uptime time.Duration) (keyboard, console time.Duration) {
	boot := now.Add(-uptime)
	keyboardLast, consoleLast := im.lastUse(now)
	since := func(t time.Time) time.Duration {
		if t.Before(boot) {
			t = boot
		}
		return max(now.Sub(t), 0)
	}
	return since(keyboardLast), since(consoleLast)
}

// lastUse returns when the keyboard (terminals or console) and the console
// were last used, from a reading of the devices no older than idleReuse.
func (im *idleMeter) lastUse(now time.Time) (keyboard, console time.Time) {
	im.mu.Lock()
	if age := now.Sub(im.readAt); !im.readAt.IsZero() && age >= 0 && age < idleReuse {
		defer im.mu.Unlock()
		return im.keyboardLast, im.consoleLast
	}
	im.mu.Unlock()
	console = newestAccess(im.console)
	if t := im.interruptActivity(now); t.After(console) {
		console = t
	}
	keyboard = newestAccess(im.terminals)
	if console.After(keyboard) {
		keyboard = console
	}
	im.mu.Lock()
	im.readAt, im.keyboardLast, im.consoleLast = now, keyboard, console
	im.mu.Unlock()
	return keyboard, console
}

// interruptActivity returns when the keyboard and mouse interrupt count
// last changed, or the zero time if it has not changed since the meter
// started (or the machine has no such interrupts).
func (im *idleMeter) interruptActivity(now time.Time) time.Time {
	b, err := im.interrupts()
	if err != nil {
		return time.Time{}
	}
	n := inputInterrupts(b)
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.seen && n != im.lastCount {
		im.lastChange = now
	}
	im.lastCount, im.seen = n, true
	return im.lastChange
}

// newestAccess returns the newest access time of the files matching
// patterns, or the zero time if none exists.
func newestAccess(patterns []string) time.Time {
	var newest time.Time
	for _, pattern := range patterns {
		names, _ := filepath.Glob(pattern) // a bad pattern matches nothing
		for _, name := range names {
			var st syscall.Stat_t
			if syscall.Stat(name, &st) != nil {
				continue
			}
			if at := time.Unix(st.Atim.Unix()); at.After(newest) {
				newest = at
			}
		}
	}
	return newest
}

// inputInterrupts sums, over all CPUs, the interrupts of the lines of
// /proc/interrupts that serve a keyboard or a mouse: the i8042 controller
// of PS/2 devices and lines whose driver names a keyboard or mouse.
func inputInterrupts(b []byte) uint64 {
	var total uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		label, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(label) == "" {
			continue
		}
		lower := strings.ToLower(rest)
		if !strings.Contains(lower, "i8042") && !strings.Contains(lower, "keyboard") && !strings.Contains(lower, "mouse") {
			continue
		}
		// The counts come first, one per CPU; the chip and driver names
		// follow.
		for _, f := range strings.Fields(rest) {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				break
			}
			total += n
		}
	}
	return total
}
