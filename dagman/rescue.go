package dagman

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxRescue is DAGMAN_MAX_RESCUE_NUM's default.
const maxRescue = 100

func rescueName(dagFile string, n int) string { return fmt.Sprintf("%s.rescue%03d", dagFile, n) }

// newestRescue returns the highest rescue DAG number of dagFile, 0 if none.
func newestRescue(dagFile string) int {
	matches, _ := filepath.Glob(dagFile + ".rescue[0-9][0-9][0-9]")
	best := 0
	for _, m := range matches {
		if n, err := strconv.Atoi(m[len(m)-3:]); err == nil && n > best {
			best = n
		}
	}
	return best
}

// applyRescue marks the nodes the chosen rescue DAG lists as DONE done,
// and returns its name ("" if none applies).
func (e *engine) applyRescue() (string, error) {
	if e.opts.NoRescue {
		return "", nil
	}
	n := e.opts.DoRescueFrom
	if n == 0 {
		n = newestRescue(e.dag.File)
	}
	if n == 0 {
		return "", nil
	}
	path := rescueName(e.dag.File, n)
	src, err := os.ReadFile(path)
	if err != nil {
		return "", &ParseError{File: path, Err: err}
	}
	for no, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		at := pos{path, no + 1}
		if !strings.EqualFold(f[0], "DONE") || len(f) != 2 {
			return "", at.errorf(ErrSyntax, "a rescue DAG holds only DONE NODE lines")
		}
		node := e.dag.Node(f[1])
		if node == nil {
			return "", at.errorf(ErrUnknownNode, "%s", f[1])
		}
		e.nodes[node.index].status = StatusDone
	}
	return path, nil
}

// writeRescue writes the next rescue DAG: HTCondor's partial rescue
// format, the DONE nodes (but FINAL and SERVICE nodes, which always run).
func writeRescue(e *engine) (string, error) {
	n := newestRescue(e.dag.File) + 1
	if n > maxRescue {
		n = maxRescue
	}
	path := rescueName(e.dag.File, n)
	var b bytes.Buffer
	var failed []string
	for i, node := range e.dag.Nodes {
		if e.nodes[i].status == StatusError {
			failed = append(failed, node.Name)
		}
	}
	fmt.Fprintf(&b, "# Rescue DAG file, created after running\n#   the %s DAG file\n", e.dag.File)
	fmt.Fprintf(&b, "# Created %s\n# Rescue DAG version: 2.0.1 (partial)\n#\n", time.Now().UTC().Format("01/02/2006 15:04:05 UTC"))
	fmt.Fprintf(&b, "# Total number of Nodes: %d\n# Nodes premarked DONE: %d\n# Nodes that failed: %d\n", len(e.dag.Nodes), e.premarked, len(failed))
	fmt.Fprintf(&b, "#   %s<ENDLIST>\n\n", strings.Join(append(failed, ""), ","))
	for i, node := range e.dag.Nodes {
		if e.nodes[i].status == StatusDone && node.Kind != FinalNode && node.Kind != ServiceNode {
			fmt.Fprintf(&b, "DONE %s\n", node.Name)
		}
	}
	if err := writeFileAtomic(path, b.Bytes()); err != nil {
		return "", fmt.Errorf("write the rescue DAG: %w", err)
	}
	return path, nil
}

// writeFileAtomic replaces path with data, so that a reader sees the old
// file or the new one, whole.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
