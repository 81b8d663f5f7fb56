package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxNesting bounds include and use nesting, which would otherwise recurse
// forever on a file that includes itself.
const maxNesting = 16

// Options control parsing. The zero value is ready to use; a nil *Options
// means the zero value.
type Options struct {
	// Env looks up variables for $ENV(); nil means os.LookupEnv.
	Env func(name string) (string, bool)
	// ReadFile reads files named by include lines; nil means os.ReadFile.
	ReadFile func(path string) ([]byte, error)

	templates map[string]string // keyed by lower-case "category:name"
}

// RegisterTemplate makes text available to "use CATEGORY : NAME" lines.
// Category and name are case-insensitive. The text is configuration
// source, read in place of the use line; a later registration under the
// same names replaces an earlier one.
func (o *Options) RegisterTemplate(category, name, text string) {
	if o.templates == nil {
		o.templates = make(map[string]string)
	}
	o.templates[templateKey(category, name)] = text
}

func templateKey(category, name string) string {
	return strings.ToLower(category) + ":" + strings.ToLower(name)
}

// Load reads the configuration file at path. Relative include paths are
// resolved against the directory of the including file.
func Load(path string, opts *Options) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	return Parse(f, path, opts)
}

// Parse reads configuration source from r. Name is used in error messages
// ("pool.conf:12: ...") and to resolve relative include paths. After reading,
// Parse expands every value once and refuses the configuration if any
// expansion fails (see Config.Check).
func Parse(r io.Reader, name string, opts *Options) (*Config, error) {
	if opts == nil {
		opts = &Options{}
	}
	p := &parser{opts: opts, cfg: newConfig(opts.Env)}
	if err := p.parse(r, name, 0); err != nil {
		return nil, err
	}
	if err := p.cfg.Check(); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

type parser struct {
	opts *Options
	cfg  *Config
}

// parse reads one source (a file, an included file or a template) into
// p.cfg; depth counts the includes and uses that led here.
func (p *parser) parse(r io.Reader, name string, depth int) error {
	br := bufio.NewReader(r)
	lineNo := 0
	for {
		line, start, err := readLogicalLine(br, &lineNo)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		if line != "" {
			pos := fmt.Sprintf("%s:%d", name, start)
			if perr := p.line(line, name, pos, depth); perr != nil {
				return perr
			}
		}
		if err != nil {
			return nil
		}
	}
}

// readLogicalLine returns the next logical line with comments skipped,
// continuation lines joined and white space trimmed, and the number of the
// physical line it started on. It returns io.EOF with the last line.
func readLogicalLine(br *bufio.Reader, lineNo *int) (string, int, error) {
	var b strings.Builder
	start := 0
	for {
		raw, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", start, err
		}
		if raw == "" && err != nil {
			return strings.TrimSpace(b.String()), start, err
		}
		*lineNo++
		text := strings.TrimRight(raw, "\r\n")
		trimmed := strings.TrimSpace(text)
		// A comment line is skipped even inside a continued line, as
		// HTCondor does, so that long expressions can be annotated.
		if trimmed == "" && b.Len() == 0 || strings.HasPrefix(trimmed, "#") {
			if err != nil {
				return strings.TrimSpace(b.String()), start, err
			}
			continue
		}
		if start == 0 {
			start = *lineNo
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(text, " \t"), `\`); ok {
			b.WriteString(body)
			if err != nil {
				return strings.TrimSpace(b.String()), start, err
			}
			continue
		}
		b.WriteString(text)
		return strings.TrimSpace(b.String()), start, err
	}
}

// line handles one logical line: a definition, a use line or an include.
func (p *parser) line(line, name, pos string, depth int) error {
	i := 0
	for i < len(line) && isKeyByte(line[i]) {
		i++
	}
	key := line[:i]
	if key == "" {
		return fmt.Errorf("%s: expected a key at %q", pos, clip(line))
	}
	rest := strings.TrimLeft(line[i:], " \t")
	if v, ok := strings.CutPrefix(rest, "="); ok {
		p.cfg.set(key, v, pos)
		return nil
	}
	switch strings.ToLower(key) {
	case "use":
		return p.use(rest, pos, depth)
	case "include":
		return p.include(rest, name, pos, depth)
	}
	return fmt.Errorf("%s: expected \"=\" after key %q", pos, key)
}

// use expands "use CATEGORY : NAME[, NAME...]"; rest is the text after "use".
func (p *parser) use(rest, pos string, depth int) error {
	category, names, ok := strings.Cut(rest, ":")
	category = strings.TrimSpace(category)
	if !ok || category == "" || !validKey(category) {
		return fmt.Errorf("%s: expected \"use CATEGORY : TEMPLATE\"", pos)
	}
	if depth >= maxNesting {
		return fmt.Errorf("%s: use nested more than %d deep", pos, maxNesting)
	}
	for n := range strings.SplitSeq(names, ",") {
		n = strings.TrimSpace(n)
		text, ok := p.opts.templates[templateKey(category, n)]
		if !ok {
			return fmt.Errorf("%s: unknown template %s:%s", pos, category, n)
		}
		src := fmt.Sprintf("%s: use %s:%s", pos, category, n)
		if err := p.parse(strings.NewReader(text), src, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// include reads "include [ifexist] : path"; rest is the text after
// "include". With ifexist a missing file is not an error.
func (p *parser) include(rest, name, pos string, depth int) error {
	mode, path, ok := strings.Cut(rest, ":")
	mode = strings.ToLower(strings.TrimSpace(mode))
	path = strings.TrimSpace(path)
	if !ok || path == "" || (mode != "" && mode != "ifexist") {
		return fmt.Errorf("%s: expected \"include [ifexist] : PATH\"", pos)
	}
	if depth >= maxNesting {
		return fmt.Errorf("%s: include nested more than %d deep", pos, maxNesting)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(name), path)
	}
	read := p.opts.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	data, err := read(path)
	if errors.Is(err, os.ErrNotExist) && mode == "ifexist" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: include: %w", pos, err)
	}
	return p.parse(strings.NewReader(string(data)), path, depth+1)
}
