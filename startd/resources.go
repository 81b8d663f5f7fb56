package startd

import (
	"fmt"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// resources are the named quantities a slot holds and a job requests.
// Slots are sized, carved and returned in these, so that a new kind of
// resource joins here and nowhere else.
type resources struct {
	cpus      int64
	memoryMiB int64
	diskKiB   int64
	gpus      int64 // devices, which a slot holds by name (slot.gpus)
}

func (r resources) plus(o resources) resources {
	return resources{r.cpus + o.cpus, r.memoryMiB + o.memoryMiB, r.diskKiB + o.diskKiB, r.gpus + o.gpus}
}

func (r resources) minus(o resources) resources {
	return resources{r.cpus - o.cpus, r.memoryMiB - o.memoryMiB, r.diskKiB - o.diskKiB, r.gpus - o.gpus}
}

// covers reports whether r holds at least o in every quantity.
func (r resources) covers(o resources) bool {
	return r.cpus >= o.cpus && r.memoryMiB >= o.memoryMiB && r.diskKiB >= o.diskKiB && r.gpus >= o.gpus
}

func (r resources) String() string {
	return fmt.Sprintf("cpus=%d, memory=%d MiB, disk=%d KiB, gpus=%d", r.cpus, r.memoryMiB, r.diskKiB, r.gpus)
}

// requestOf is what a job asks of a dynamic slot: RequestCpus (at least
// one), RequestMemory (MiB), RequestDisk (KiB) and RequestGPUs, as
// HTCondor carves.
func requestOf(job *classad.ClassAd) resources {
	var r resources
	r.cpus, _ = job.EvalInt("RequestCpus")
	r.memoryMiB, _ = job.EvalInt("RequestMemory")
	r.diskKiB, _ = job.EvalInt("RequestDisk")
	r.gpus, _ = job.EvalInt("RequestGPUs")
	return resources{max(r.cpus, 1), max(r.memoryMiB, 0), max(r.diskKiB, 0), max(r.gpus, 0)}
}

// amount is one resource of a slot type: an absolute quantity, or a
// fraction of the machine's. The zero amount is unspecified: an even share
// of the machine among all its configured slots.
type amount struct {
	abs  int64
	frac float64 // used when abs is 0
}

func (a amount) of(total int64, slots int) int64 {
	switch {
	case a.abs > 0:
		return a.abs
	case a.frac > 0:
		return int64(a.frac * float64(total))
	}
	return total / int64(max(slots, 1))
}

// share is how much of the machine a static or partitionable slot has
// (HTCondor's SLOT_TYPE_<n>).
type share struct {
	cpus, memory, disk amount
}

// of resolves s against the machine m, which has slots configured slots
// in all; a slot has at least one CPU.
func (s share) of(m machine, slots int) resources {
	return resources{
		cpus:      max(s.cpus.of(int64(m.cpus), slots), 1),
		memoryMiB: s.memory.of(m.memoryMiB, slots),
		diskKiB:   s.disk.of(m.diskKiB, slots),
	}
}

// parseShare parses a SLOT_TYPE_<n> value as HTCondor writes it: a
// comma-separated list of "cpus=4", "memory=2048", "disk=25%",
// "ram=1/4" (names case-insensitive; memory in MiB and disk in KiB unless
// given with a unit such as 4G), or one bare percentage or fraction that
// applies to every resource ("50%", "1/2"). Resources not named get an
// even share of the machine.
func parseShare(text string) (share, error) {
	var s share
	text = strings.TrimSpace(text)
	if text == "" {
		return s, nil
	}
	if !strings.Contains(text, "=") {
		a, err := parseAmount(text, 1)
		if err != nil || a.frac == 0 {
			return s, fmt.Errorf("slot type %q: a bare value must be a percentage or a fraction", text)
		}
		return share{a, a, a}, nil
	}
	for _, part := range strings.Split(text, ",") {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return s, fmt.Errorf("slot type %q: %q is not name=value", text, strings.TrimSpace(part))
		}
		var dst *amount
		unit := int64(1)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "cpus", "cpu", "c":
			dst = &s.cpus
		case "memory", "mem", "ram", "m":
			dst, unit = &s.memory, 1<<20
		case "disk", "d":
			dst, unit = &s.disk, 1<<10
		default:
			return s, fmt.Errorf("slot type %q: unknown resource %q", text, strings.TrimSpace(name))
		}
		a, err := parseAmount(val, unit)
		if err != nil {
			return s, fmt.Errorf("slot type %q: %w", text, err)
		}
		*dst = a
	}
	return s, nil
}

// parseAmount parses "25%", "1/4", "8", or a size such as "4G" for a
// resource counted in units of unit bytes.
func parseAmount(text string, unit int64) (amount, error) {
	t := strings.TrimSpace(text)
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 {
			return amount{}, fmt.Errorf("bad percentage %q", t)
		}
		return amount{frac: f / 100}, nil
	}
	if num, den, ok := strings.Cut(t, "/"); ok {
		n, err1 := strconv.ParseFloat(strings.TrimSpace(num), 64)
		d, err2 := strconv.ParseFloat(strings.TrimSpace(den), 64)
		if err1 != nil || err2 != nil || n <= 0 || d <= 0 || n > d {
			return amount{}, fmt.Errorf("bad fraction %q", t)
		}
		return amount{frac: n / d}, nil
	}
	mult := int64(1)
	if unit > 1 && t != "" {
		// Sizes with a unit are bytes; bare numbers are in the resource's unit.
		units := map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
		if u, ok := units[strings.ToUpper(t[len(t)-1:])[0]]; ok {
			t, mult = strings.TrimSpace(t[:len(t)-1]), u
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return amount{}, fmt.Errorf("bad quantity %q", text)
	}
	if mult > 1 {
		n = n * mult / unit
	}
	return amount{abs: max(n, 1)}, nil
}
