package submit

import (
	"fmt"
	"strconv"
	"strings"
)

// GPU requests. request_gpus sets RequestGPUs, which Requirements asks of
// the machine's GPUs; require_gpus and the gpus_minimum_* and
// gpus_maximum_* commands are AND-ed into RequireGPUs, an expression over
// one GPU's properties (Capability, GlobalMemoryMb, DeviceName, ...), as
// condor_submit writes it. Requirements asks it of the slot's GPUs
// through the properties they share, which the startd publishes as
// GPUs_<name>: every GPU of the slot must satisfy it.

func setRequestGPUs(j *job, name, v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n == 0 {
		return nil // no GPU: no request and no clause
	}
	return exprAttr("RequestGPUs")(j, name, v)
}

func setRequireGPUs(j *job, name, v string) error {
	if _, err := j.expr(name, v); err != nil {
		return err
	}
	j.requireGPUs = append(j.requireGPUs, "("+v+")")
	return nil
}

// gpuBound returns the command that adds the clause prop op value to
// RequireGPUs; value is a number, in MiB for memory.
func gpuBound(prop, op string) command {
	return func(j *job, name, v string) error {
		var clause string
		if prop == "GlobalMemoryMb" {
			n, literal, err := parseSize(v, 1<<20, 1<<20)
			if err != nil || !literal {
				return fmt.Errorf("bad %s: %q is not a size", name, v)
			}
			clause = fmt.Sprintf("%s %s %d", prop, op, n)
		} else {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("bad %s: %q is not a number", name, v)
			}
			clause = fmt.Sprintf("%s %s %s", prop, op, strconv.FormatFloat(x, 'f', -1, 64))
		}
		j.requireGPUs = append(j.requireGPUs, clause)
		return nil
	}
}

// finishGPUs sets RequireGPUs from the job's GPU commands.
func (j *job) finishGPUs() error {
	if len(j.requireGPUs) == 0 {
		return nil
	}
	e, err := j.expr("require_gpus", strings.Join(j.requireGPUs, " && "))
	if err != nil {
		return err
	}
	j.ad.Set("RequireGPUs", e)
	return nil
}

// gpuClauses are the Requirements clauses of a job that requests GPUs:
// enough of them, and, with RequireGPUs, that they have the properties
// it asks for.
func gpuClauses(j *job, mentioned map[string]bool) []string {
	if _, ok := j.ad.Lookup("RequestGPUs"); !ok {
		return nil
	}
	var parts []string
	if !mentioned["gpus"] {
		parts = append(parts, "(TARGET.GPUs >= RequestGPUs)")
	}
	if len(j.requireGPUs) > 0 {
		parts = append(parts, "("+slotGPUProps(strings.Join(j.requireGPUs, " && "))+")")
	}
	return parts
}

// slotGPUProps rewrites an expression over one GPU's properties into one
// over the properties a slot's GPUs share: each unscoped attribute name
// Name becomes TARGET.GPUs_Name. Function names, keywords, scoped names
// (MY.x, TARGET.x) and string literals are left as they are.
func slotGPUProps(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"':
			k := i + 1
			for k < len(src) && src[k] != '"' {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			k = min(k+1, len(src))
			b.WriteString(src[i:k])
			i = k
		case '0' <= c && c <= '9':
			k := i
			for k < len(src) && (isIdentByte(src[k], true) || src[k] == '.') {
				k++
			}
			b.WriteString(src[i:k])
			i = k
		case isIdentByte(c, false):
			k := i
			for k < len(src) && (isIdentByte(src[k], true) || src[k] == '.') {
				k++
			}
			w := src[i:k]
			rest := strings.TrimLeft(src[k:], " \t")
			switch {
			case strings.Contains(w, "."), strings.HasPrefix(rest, "("), classadKeyword(w):
				b.WriteString(w)
			default:
				b.WriteString("TARGET.GPUs_" + w)
			}
			i = k
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func classadKeyword(w string) bool {
	switch strings.ToLower(w) {
	case "true", "false", "undefined", "error", "is", "isnt", "parent":
		return true
	}
	return false
}
