package submit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// include reads the file or command output an include statement names:
//
//	include [ifexist] : FILE
//	include : COMMAND |
//	include [ifexist] command [into FILE] : COMMAND
//
// The target is macro-expanded; a FILE is relative to the submit
// directory. A command runs, as the submitting user, in the submit
// directory (condor_submit runs it too); with "into" its output is kept in
// FILE, which is read instead of running the command when it exists. With
// ifexist a missing file, or a command that fails, includes nothing. The
// included statements' messages name the included file and its lines.
func (r *reader) include(words, target, file string, line int) error {
	ifExist, isCommand, into, err := includeOptions(words)
	if err != nil {
		return err
	}
	macroRefs(target, r.refs)
	t, err := r.x.expand(target)
	if err != nil {
		return fmt.Errorf("include: %w", err)
	}
	t = strings.TrimSpace(t)
	if strings.HasSuffix(t, "|") {
		isCommand = true
		t = strings.TrimRight(t, "| \t")
	}
	if t == "" {
		return errors.New("include: no file or command given")
	}
	if r.depth >= maxIncludeDepth {
		return fmt.Errorf("include %s: includes nested more than %d deep", t, maxIncludeDepth)
	}
	var src []byte
	name := t
	if isCommand {
		name = t + " |"
		if src, err = r.includeCommand(t, into); err != nil {
			if ifExist {
				return nil
			}
			return err
		}
	} else {
		src, err = os.ReadFile(absJoin(r.x.dir, t))
		if err != nil {
			if ifExist && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("include: %w", err)
		}
	}
	r.depth++
	defer func() { r.depth-- }()
	return r.read(src, name)
}

// includeOptions reads the words between "include" and ":".
func includeOptions(words string) (ifExist, isCommand bool, into string, err error) {
	f := strings.Fields(words)
	if len(f) > 0 && (f[0] == "ifexist" || f[0] == "ifexists") {
		ifExist, f = true, f[1:]
	}
	if len(f) > 0 && (f[0] == "command" || f[0] == "output") {
		isCommand, f = true, f[1:]
		if len(f) > 0 && f[0] == "into" {
			if len(f) < 2 {
				return false, false, "", errors.New(`include: expected a file name after "into"`)
			}
			into, f = f[1], f[2:]
		}
	}
	if len(f) > 0 {
		return false, false, "", fmt.Errorf("include: unexpected %q (want include [ifexist] [command [into FILE]] : TARGET)", strings.Join(f, " "))
	}
	return ifExist, isCommand, into, nil
}

// includeCommand returns the output of an included command, or of its
// "into" file if that exists.
func (r *reader) includeCommand(cmdline, into string) ([]byte, error) {
	var cache string
	if into != "" {
		macroRefs(into, r.refs)
		v, err := r.x.expand(into)
		if err != nil {
			return nil, fmt.Errorf("include into: %w", err)
		}
		if v = strings.TrimSpace(v); v == "" || strings.HasSuffix(v, "|") {
			return nil, fmt.Errorf("include into %q: want a file name", v)
		}
		cache = absJoin(r.x.dir, v)
		if data, err := os.ReadFile(cache); err == nil {
			return data, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("include into: %w", err)
		}
	}
	out, err := r.run(cmdline)
	if err != nil {
		return nil, fmt.Errorf("include command %s: %w", cmdline, err)
	}
	if cache != "" {
		if err := os.WriteFile(cache, out, 0o644); err != nil {
			return nil, fmt.Errorf("include into: %w", err)
		}
	}
	return out, nil
}

// errNoCommands refuses a description that runs a command where running
// commands is not allowed.
var errNoCommands = errors.New("running commands is not allowed here (harrier submit runs them as you, in the submit directory)")

// run runs a command line, written in either of HTCondor's argument
// syntaxes, with env.Command.
func (r *reader) run(cmdline string) ([]byte, error) {
	return runCommand(r.env.Command, r.x.dir, cmdline)
}

func runCommand(run func(dir string, argv []string) ([]byte, error), dir, cmdline string) ([]byte, error) {
	if run == nil {
		return nil, errNoCommands
	}
	argv, err := splitArgs(cmdline)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	return run(dir, argv)
}
