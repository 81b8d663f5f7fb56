package shadow

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// Access methods of a physical name, as iofs understands them. The base
// methods name where the bytes are (remote, local, http, https); the others
// transform the access to the method after them.
const (
	methodRemote   = "remote"   // the submit machine, over the shadow's I/O service
	methodLocal    = "local"    // the execute machine, beneath the job's scratch directory
	methodHTTP     = "http"     // the rest of the name is the URL's remainder
	methodHTTPS    = "https"    //
	methodCompress = "compress" // gzip: decompress on read, compress on write
	methodBuffer   = "buffer"   // block cache with read-ahead and write-behind
	methodFetch    = "fetch"    // copy the whole file at open and back at close
	methodAppend   = "append"   // every write appends
)

// HTCondor's defaults for a buffer named in buffer_files without sizes.
const (
	defaultBufferSize      = 512 << 10
	defaultBufferBlockSize = 32 << 10
)

// Physical is a physical file name: the methods to apply, outermost first,
// and the path (or URL) the base method opens.
type Physical struct {
	Methods []string
	Path    string
	// BufferSize and BufferBlockSize size the "buffer" method's cache.
	BufferSize      int64
	BufferBlockSize int64
}

// String formats p as "buffer:remote:/home/u/in.dat" or "http://host/p"
// (a URL's path keeps its "//").
func (p Physical) String() string {
	return strings.Join(p.Methods, ":") + ":" + p.Path
}

// Base returns the method that reaches the bytes (the last one).
func (p Physical) Base() string { return p.Methods[len(p.Methods)-1] }

// Mapping is the shadow's answer to phase one of the two-phase open: it maps
// the logical names a job uses (relative to its initial directory) to
// physical names, following the job's submit description with HTCondor's
// meaning of file_remaps, local_files, compress_files, buffer_files,
// buffer_size, buffer_block_size, fetch_files and append_files.
//
// A Mapping is immutable; the shadow changes a running job's mapping by
// installing a new one (IOServer.SetMapping).
type Mapping struct {
	iwd      string
	remaps   []remap // longest logical name first
	local    []string
	compress []string
	fetch    []string
	append   []string
	buffers  []bufferRule
	// bufferSize > 0 buffers every remote file not named in buffers.
	bufferSize, bufferBlock int64
}

type remap struct {
	logical string // cleaned, relative to Iwd
	target  Physical
}

type bufferRule struct {
	pattern     string
	size, block int64
}

// NewMapping builds the mapping from a job ad. Iwd must be an absolute path.
// Malformed entries are reported together in the error; the mapping
// returned with it holds the well-formed rest.
func NewMapping(job *classad.ClassAd) (*Mapping, error) {
	iwd, _ := job.EvalString("Iwd")
	if !filepath.IsAbs(iwd) {
		return nil, fmt.Errorf("job mapping: Iwd %q is not an absolute path", iwd)
	}
	m := &Mapping{iwd: filepath.Clean(iwd)}
	var errs []error
	str := func(attr string) string { s, _ := job.EvalString(attr); return s }
	list := func(attr string) []string {
		var out []string
		for _, f := range strings.FieldsFunc(str(attr), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if _, err := path.Match(f, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s: bad pattern %q: %w", attr, f, err))
				continue
			}
			out = append(out, m.logicalPattern(f))
		}
		return out
	}
	m.local, m.compress, m.fetch, m.append = list("LocalFiles"), list("CompressFiles"), list("FetchFiles"), list("AppendFiles")

	for _, entry := range splitEntries(str("FileRemaps")) {
		name, target, ok := strings.Cut(entry, "=")
		name, target = strings.TrimSpace(name), strings.TrimSpace(target)
		if !ok || name == "" || target == "" {
			errs = append(errs, fmt.Errorf("FileRemaps: entry %q is not name = target", entry))
			continue
		}
		logical, err := m.logical(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("FileRemaps: %w", err))
			continue
		}
		phys, err := m.parseTarget(target)
		if err != nil {
			errs = append(errs, fmt.Errorf("FileRemaps: %s: %w", name, err))
			continue
		}
		m.remaps = append(m.remaps, remap{logical: logical, target: phys})
	}
	slices.SortStableFunc(m.remaps, func(a, b remap) int { return len(b.logical) - len(a.logical) })

	if v, ok := job.EvalInt("BufferSize"); ok && v > 0 {
		m.bufferSize = v
		m.bufferBlock = defaultBufferBlockSize
		if b, ok := job.EvalInt("BufferBlockSize"); ok && b > 0 {
			m.bufferBlock = b
		}
	}
	for _, entry := range splitEntries(str("BufferFiles")) {
		rule, err := m.parseBufferRule(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("BufferFiles: %w", err))
			continue
		}
		m.buffers = append(m.buffers, rule)
	}
	return m, errors.Join(errs...)
}

// splitEntries splits "a = b ; c = d" (HTCondor's remap and buffer lists)
// at semicolons.
func splitEntries(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ";") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseBufferRule parses "pattern = (size,block)"; the sizes are optional.
func (m *Mapping) parseBufferRule(entry string) (bufferRule, error) {
	pat, sizes, _ := strings.Cut(entry, "=")
	pat = strings.TrimSpace(pat)
	if _, err := path.Match(pat, ""); err != nil || pat == "" {
		return bufferRule{}, fmt.Errorf("bad pattern in %q", entry)
	}
	r := bufferRule{pattern: m.logicalPattern(pat), size: defaultBufferSize, block: defaultBufferBlockSize}
	if sizes = strings.TrimSpace(sizes); sizes == "" {
		return r, nil
	}
	inner, ok := strings.CutPrefix(sizes, "(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	a, b, ok3 := strings.Cut(inner, ",")
	size, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	block, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if !ok || !ok2 || !ok3 || err1 != nil || err2 != nil || size <= 0 || block <= 0 || block > size {
		return bufferRule{}, fmt.Errorf("%q: want pattern = (size,block_size)", entry)
	}
	r.size, r.block = size, block
	return r, nil
}

// parseTarget parses the right side of a remap: a URL, "local:name",
// "remote:/path", or a plain path (remote; relative to Iwd).
func (m *Mapping) parseTarget(t string) (Physical, error) {
	if scheme, rest, ok := strings.Cut(t, "://"); ok {
		if scheme != methodHTTP && scheme != methodHTTPS {
			return Physical{}, fmt.Errorf("unsupported URL scheme %q", scheme)
		}
		return Physical{Methods: []string{scheme}, Path: "//" + rest}, nil
	}
	if rest, ok := strings.CutPrefix(t, methodLocal+":"); ok {
		// Local names stay beneath the execute machine's scratch directory.
		p := path.Clean("/" + rest)[1:]
		if p == "" {
			return Physical{}, fmt.Errorf("empty local name")
		}
		return Physical{Methods: []string{methodLocal}, Path: p}, nil
	}
	t = strings.TrimPrefix(t, methodRemote+":")
	if !filepath.IsAbs(t) {
		t = filepath.Join(m.iwd, t)
	}
	return Physical{Methods: []string{methodRemote}, Path: filepath.Clean(t)}, nil
}

// logical turns a name as the job may write it (relative, or absolute under
// Iwd) into a clean name relative to Iwd; "." is Iwd itself.
func (m *Mapping) logical(name string) (string, error) {
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(m.iwd, filepath.Clean(name))
		if err != nil {
			return "", fmt.Errorf("%s is not under %s", name, m.iwd)
		}
		name = rel
	}
	name = filepath.Clean(name)
	if name == ".." || strings.HasPrefix(name, "../") {
		return "", fmt.Errorf("%s is outside the job's directory %s", name, m.iwd)
	}
	return name, nil
}

// logicalPattern makes an absolute pattern under Iwd relative, like names.
func (m *Mapping) logicalPattern(p string) string {
	if l, err := m.logical(p); err == nil && filepath.IsAbs(p) {
		return l
	}
	return p
}

// matches reports whether a logical name matches a pattern: the whole name,
// or its last element for patterns without a slash (as "*.dat" is meant).
func matches(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
		if !strings.Contains(p, "/") {
			if ok, _ := path.Match(p, path.Base(name)); ok {
				return true
			}
		}
	}
	return false
}

// ErrOutside is returned for names that would leave the job's directory.
var ErrOutside = errors.New("name outside the job's directory")

// Resolve maps a logical name to its physical name.
func (m *Mapping) Resolve(name string) (Physical, error) {
	logical, err := m.logical(name)
	if err != nil {
		return Physical{}, fmt.Errorf("%w: %v", ErrOutside, err)
	}
	phys := Physical{Methods: []string{methodRemote}, Path: filepath.Join(m.iwd, logical)}
	remapped := false
	for _, r := range m.remaps {
		if logical == r.logical {
			phys, remapped = r.target, true
			break
		}
		// A remapped directory carries the names beneath it along.
		if rest, ok := strings.CutPrefix(logical, r.logical+"/"); ok && r.logical != "." {
			phys, remapped = r.target, true
			phys.Path = path.Join(phys.Path, rest)
			break
		}
	}
	if !remapped && matches(m.local, logical) {
		phys = Physical{Methods: []string{methodLocal}, Path: logical}
	}
	if logical == "." {
		return phys, nil
	}

	staged := false
	switch {
	case matches(m.compress, logical):
		phys.Methods = append([]string{methodCompress}, phys.Methods...)
		staged = true
	case matches(m.fetch, logical):
		phys.Methods = append([]string{methodFetch}, phys.Methods...)
		staged = true
	}
	// Staging rewrites the whole file at close; appending to it means nothing.
	appending := !staged && matches(m.append, logical)
	// A buffer helps only over the network, and not under whole-file
	// staging, which is a buffer of its own, nor under append.
	if !staged && !appending && phys.Base() != methodLocal {
		size, block := m.bufferSize, m.bufferBlock
		for _, r := range m.buffers {
			if matches([]string{r.pattern}, logical) {
				size, block = r.size, r.block
				break
			}
		}
		if size > 0 {
			phys.Methods = append([]string{methodBuffer}, phys.Methods...)
			phys.BufferSize, phys.BufferBlockSize = size, block
		}
	}
	if appending {
		phys.Methods = append([]string{methodAppend}, phys.Methods...)
	}
	return phys, nil
}

// roots returns the submit-side trees the I/O server may touch: the initial
// directory and the remote targets of remaps, longest first.
func (m *Mapping) roots() []string {
	roots := []string{m.iwd}
	for _, r := range m.remaps {
		if r.target.Base() == methodRemote {
			roots = append(roots, r.target.Path)
		}
	}
	slices.SortFunc(roots, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(roots)
}
