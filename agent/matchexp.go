package agent

import (
	"context"
	"fmt"
	"strings"

	"harrier.dev/harrier/classad"
)

// Match-time substitution (condor_submit's $$): a string attribute of a
// job may name attributes of the machine it will run on, $$(Name),
// $$(Name:default) or $$([expression]), which submit leaves as written.
// When a run starts on a claimed machine, the agent replaces them, in the
// copy of the job's ad the run is given, with the machine's values, and
// records in the queue what they came to, under HTCondor's names:
// MATCH_EXP_<attribute> for each attribute expanded and MATCH_<Name> for
// each machine attribute read. A reference the machine cannot answer,
// with no default, holds the job.

// expandForRun is the job's ad as run r on machine gives it to the
// shadow, its references replaced, with what they came to recorded; or
// why the job must be held instead.
func (a *Agent) expandForRun(ctx context.Context, r *run, job, machine *classad.ClassAd) (_ *classad.ClassAd, holdReason string, err error) {
	if machine == nil {
		machine = classad.New()
	}
	out, set, err := expandMatchRefs(job, machine)
	if err != nil {
		return nil, "Cannot expand the job's match-time references: " + err.Error(), nil
	}
	if set == nil {
		return out, "", nil
	}
	if _, err := a.jobs.apply(ctx, r.id, func(*classad.ClassAd) (step, error) { return step{set: set}, nil }); err != nil {
		return nil, "", fmt.Errorf("record the job's match-time expansions: %w", err)
	}
	return out, "", nil
}

// scratchDirRef, $$(CondorScratchDir), is the job's scratch directory on
// the execute machine, which the starter puts in its arguments and
// environment.
const scratchDirRef = "CondorScratchDir"

// matchRefPrefix starts a reference.
const matchRefPrefix = "$$("

// expandMatchRefs returns job with every reference in its string
// attributes replaced by machine's values, and the MATCH_ attributes to
// record; job itself is left alone, and returned as it is when it holds
// no reference.
func expandMatchRefs(job, machine *classad.ClassAd) (*classad.ClassAd, change, error) {
	var out *classad.ClassAd
	var set change
	for _, name := range job.Names() {
		e, _ := job.Lookup(name)
		lit, ok := e.AsLiteral()
		if !ok {
			continue
		}
		s, ok := lit.StringValue()
		if !ok || !strings.Contains(s, matchRefPrefix) {
			continue
		}
		expanded, found, err := expandString(s, job, machine, func(attr string, v classad.Value) {
			if set == nil {
				set = change{}
			}
			set["MATCH_"+attr] = v
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if !found {
			continue
		}
		if out == nil {
			out = job.Copy()
		}
		out.SetString(name, expanded)
		if set == nil {
			set = change{}
		}
		set["MATCH_EXP_"+name] = classad.String(expanded)
	}
	if out == nil {
		return job, nil, nil
	}
	return out, set, nil
}

// expandString replaces the references in s, and reports whether there
// were any; read is told each machine attribute a $$(Name) reference
// read, and its value. Text that only looks like a reference, a shell's
// $$(date +%s), is left as it is; $$(DOLLARDOLLAR) is "$$".
func expandString(s string, job, machine *classad.ClassAd, read func(string, classad.Value)) (string, bool, error) {
	var b strings.Builder
	found := false
	for {
		i := strings.Index(s, matchRefPrefix)
		if i < 0 {
			b.WriteString(s)
			return b.String(), found, nil
		}
		b.WriteString(s[:i])
		body := s[i+len(matchRefPrefix):]
		if strings.HasPrefix(body, "[") {
			end := strings.Index(body, "])")
			if end < 0 {
				b.WriteString(matchRefPrefix)
				s = body
				continue
			}
			found = true
			src := body[1:end]
			e, err := classad.ParseExpr(src)
			if err != nil {
				return "", false, fmt.Errorf("$$([%s]): %w", src, err)
			}
			v := machine.EvalExpr(e, job)
			if !known(v) {
				return "", false, fmt.Errorf("$$([%s]) is %s on the machine", src, v)
			}
			b.WriteString(valueText(v))
			s = body[end+2:]
			continue
		}
		n := 0
		for n < len(body) && isRefNameByte(body[n]) {
			n++
		}
		def, hasDefault := "", false
		end := n
		if n < len(body) && body[n] == ':' {
			if k := strings.IndexByte(body[n:], ')'); k >= 0 {
				def, hasDefault, end = body[n+1:n+k], true, n+k
			}
		}
		if n == 0 || end >= len(body) || body[end] != ')' {
			b.WriteString(matchRefPrefix) // not a reference
			s = body
			continue
		}
		attr := body[:n]
		if attr == scratchDirRef {
			// The starter's to replace: the agent does not know it.
			b.WriteString(matchRefPrefix + attr + ")")
			s = body[end+1:]
			continue
		}
		found = true
		s = body[end+1:]
		if attr == "DOLLARDOLLAR" {
			b.WriteString("$$")
			continue
		}
		switch v := machine.EvalAttrAgainst(attr, job); {
		case known(v):
			read(attr, v)
			b.WriteString(valueText(v))
		case hasDefault:
			b.WriteString(def)
		default:
			return "", false, fmt.Errorf("the machine has no %s for $$(%s)", attr, attr)
		}
	}
}

// isRefNameByte reports whether c may be part of a referenced name.
func isRefNameByte(c byte) bool {
	return c == '_' || c == '.' || c == '/' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// valueText is v as a reference puts it into a string: a string's text,
// any other value as HTCondor prints it.
func valueText(v classad.Value) string {
	if s, ok := v.StringValue(); ok {
		return s
	}
	return v.OldString()
}

// known reports whether v is a value, not undefined or an error.
func known(v classad.Value) bool { return !v.IsUndefined() && !v.IsError() }
