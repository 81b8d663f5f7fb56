package startd

import (
	"fmt"
	"log/slog"

	"harrier.dev/harrier/sandbox"
)

// Sandbox modes a startd runs its jobs in. The configured mode goes to
// each starter as it is; with none configured the starter, on the same
// machine, makes the same choice as chooseSandbox.
const (
	sandboxContainer = "container"
	sandboxProcess   = "process"
)

// checkSandbox checks the configured mode.
func checkSandbox(mode string) error {
	switch mode {
	case "", sandboxContainer, sandboxProcess:
		return nil
	}
	return fmt.Errorf("SANDBOX %q: want container, process or nothing", mode)
}

// chooseSandbox is the mode jobs run in, as advertised: the configured
// one, or with none configured containers when this machine can run them
// (root, cgroups mounted) and plain processes otherwise.
func chooseSandbox(mode string, logger *slog.Logger) string {
	if mode != "" {
		return mode
	}
	if err := sandbox.Available(); err != nil {
		logger.Info("jobs run as plain processes", "reason", err)
		return sandboxProcess
	}
	return sandboxContainer
}

// cleanupSlot removes the container and cgroups a starter of slot may
// have left behind, when it was killed, say. Plain processes leave
// nothing the kill of the starter's process group did not take.
func cleanupSlot(executeDir, slot, mode string) error {
	if mode == sandboxProcess || sandbox.Available() != nil {
		return nil
	}
	return sandbox.Cleanup(sandbox.StateRoot(executeDir), slot)
}

// cleanupSandbox removes every container and cgroup left in executeDir by
// the starters of a startd that did not shut down cleanly.
func cleanupSandbox(executeDir string) error {
	if sandbox.Available() != nil {
		return nil // nothing could have been made
	}
	return sandbox.CleanupAll(sandbox.StateRoot(executeDir))
}
