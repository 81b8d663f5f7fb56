package submit

import (
	"fmt"
	"strconv"
	"strings"
)

// signalNames are the Linux signals a job may be sent by name.
var signalNames = map[string]bool{
	"SIGHUP": true, "SIGINT": true, "SIGQUIT": true, "SIGILL": true, "SIGTRAP": true,
	"SIGABRT": true, "SIGBUS": true, "SIGFPE": true, "SIGKILL": true, "SIGUSR1": true,
	"SIGSEGV": true, "SIGUSR2": true, "SIGPIPE": true, "SIGALRM": true, "SIGTERM": true,
	"SIGSTKFLT": true, "SIGCHLD": true, "SIGCONT": true, "SIGSTOP": true, "SIGTSTP": true,
	"SIGTTIN": true, "SIGTTOU": true, "SIGURG": true, "SIGXCPU": true, "SIGXFSZ": true,
	"SIGVTALRM": true, "SIGPROF": true, "SIGWINCH": true, "SIGIO": true, "SIGPWR": true,
	"SIGSYS": true,
}

// parseSignal accepts a signal name with or without "SIG", in any case, or a
// number, and returns HTCondor's spelling: "SIGTERM" or the number.
func parseSignal(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return "", fmt.Errorf("signal number %d out of range", n)
		}
		return s, nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if !signalNames[name] {
		return "", fmt.Errorf("unknown signal %q", s)
	}
	return name, nil
}
