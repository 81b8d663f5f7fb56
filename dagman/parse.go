package dagman

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ParseOptions says where a DAG's files are.
type ParseOptions struct {
	// Dir is the directory relative file names are relative to (condor_
	// dagman's working directory); "" means the DAG file's directory.
	Dir string
	// ReadFile reads included and spliced files; nil means os.ReadFile.
	ReadFile func(path string) ([]byte, error)
}

// ParseFile reads and checks the DAG file at path, with everything it
// includes and splices, and returns the first problem found as a
// *ParseError naming the file and line.
func ParseFile(path string, opts ParseOptions) (*DAG, error) {
	start := time.Now()
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	src, err := opts.ReadFile(path)
	if err != nil {
		return nil, &ParseError{File: path, Err: err}
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(path)
	}
	dag, err := Parse(src, path, opts)
	if err != nil {
		return nil, err
	}
	dag.ParseTime = time.Since(start)
	return dag, nil
}

// Parse reads and checks DAG file text; name names it in errors and is the
// DAG's File. Included and spliced files are read with opts.ReadFile,
// relative to opts.Dir ("" means "."). The nodes' directories, and the
// files DOT, NODE_STATUS_FILE and CONFIG name, are absolute.
func Parse(src []byte, name string, opts ParseOptions) (*DAG, error) {
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	if opts.Dir == "" {
		opts.Dir = "."
	}
	// Scripts run, and jobs are submitted, from the nodes' directories
	// whatever the process's own: they are absolute.
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	opts.Dir = dir
	dag := &DAG{File: name, byName: make(map[string]*Node), MaxJobs: make(map[string]int)}
	edges := make(map[uint64]pos)
	b := newBuilder(dag, opts, "", opts.Dir, []string{name}, edges)
	stmts, err := b.read(src, name)
	if err != nil {
		return nil, err
	}
	if err := b.build(stmts); err != nil {
		return nil, err
	}
	if err := checkCycles(dag, edges); err != nil {
		return nil, err
	}
	if dag.Final != nil {
		// The FINAL node is last, whatever its place in the file.
		i := dag.Final.index
		copy(dag.Nodes[i:], dag.Nodes[i+1:])
		dag.Nodes[len(dag.Nodes)-1] = dag.Final
		for j := i; j < len(dag.Nodes); j++ {
			dag.Nodes[j].index = j
		}
	}
	return dag, nil
}

// A stmt is one logical line of a DAG file.
type stmt struct {
	pos
	keyword string   // upper case
	fields  []string // the line split at white space, keyword first
	text    string   // the whole line
}

// builder builds the nodes of one file (the DAG or a splice) into dag.
type builder struct {
	dag    *DAG
	opts   ParseOptions
	prefix string // "SPLICE+" inside a splice
	dir    string
	stack  []string       // files being read, to refuse include and splice loops
	edges  map[uint64]pos // every PARENT-CHILD edge, and where it was declared

	local   map[string]*Node   // nodes by the name this file knows them by
	own     []*Node            // nodes this file defines with JOB or SUBDAG (ALL_NODES)
	splices map[string]*splice // splices by name
}

// A splice's initial nodes become children and its final ones parents
// when the splice's name appears in a PARENT ... CHILD line.
type splice struct {
	initial, terminal []*Node
}

func newBuilder(dag *DAG, opts ParseOptions, prefix, dir string, stack []string, edges map[uint64]pos) *builder {
	return &builder{dag: dag, opts: opts, prefix: prefix, dir: dir, stack: stack, edges: edges,
		local: make(map[string]*Node), splices: make(map[string]*splice)}
}

// read splits src into statements, reading INCLUDE files in place.
func (b *builder) read(src []byte, file string) ([]stmt, error) {
	var out []stmt
	lineNo := 0
	var cont strings.Builder
	contStart := 0
	for len(src) > 0 {
		var raw []byte
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			raw, src = src[:i], src[i+1:]
		} else {
			raw, src = src, nil
		}
		lineNo++
		line := strings.TrimSpace(string(raw))
		if cont.Len() == 0 && (line == "" || line[0] == '#') {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			if cont.Len() == 0 {
				contStart = lineNo
			}
			cont.WriteString(strings.TrimSuffix(line, "\\"))
			cont.WriteByte(' ')
			continue
		}
		at := lineNo
		if cont.Len() > 0 {
			cont.WriteString(line)
			line, at = cont.String(), contStart
			cont.Reset()
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		s := stmt{pos: pos{file, at}, keyword: strings.ToUpper(fields[0]), fields: fields, text: line}
		if s.keyword != "INCLUDE" {
			out = append(out, s)
			continue
		}
		if len(fields) != 2 {
			return nil, s.errorf(ErrSyntax, "want INCLUDE FILE")
		}
		inc, err := b.readNested(s.pos, fields[1])
		if err != nil {
			return nil, err
		}
		out = append(out, inc...)
	}
	if cont.Len() > 0 {
		return nil, pos{file, contStart}.errorf(ErrSyntax, "the file ends in a continued line")
	}
	return out, nil
}

// readNested reads the statements of an included file.
func (b *builder) readNested(at pos, name string) ([]stmt, error) {
	path := b.path(name)
	for _, f := range b.stack {
		if f == path {
			return nil, at.errorf(ErrSyntax, "%s includes itself", name)
		}
	}
	src, err := b.opts.ReadFile(path)
	if err != nil {
		return nil, &ParseError{File: at.file, Line: at.line, Err: fmt.Errorf("include %s: %w", name, err)}
	}
	b.stack = append(b.stack, path)
	defer func() { b.stack = b.stack[:len(b.stack)-1] }()
	return b.read(src, path)
}

func (b *builder) path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(b.dir, name)
}

// build defines the nodes first, so that other statements may name nodes
// defined further down, then applies the rest in order: a later RETRY,
// VARS ... of a node adds to or replaces an earlier one as in HTCondor.
func (b *builder) build(stmts []stmt) error {
	for _, s := range stmts {
		var err error
		switch s.keyword {
		case "JOB":
			err = b.defineNode(s, JobNode, s.fields[1:])
		case "FINAL":
			err = b.defineNode(s, FinalNode, s.fields[1:])
		case "SERVICE":
			err = b.defineNode(s, ServiceNode, s.fields[1:])
		case "SUBDAG":
			if len(s.fields) < 2 || !strings.EqualFold(s.fields[1], "EXTERNAL") {
				err = s.errorf(ErrSyntax, "want SUBDAG EXTERNAL NAME FILE")
			} else {
				err = b.defineNode(s, SubDAGNode, s.fields[2:])
			}
		case "SPLICE":
			err = b.splice(s)
		}
		if err != nil {
			return err
		}
	}
	for _, s := range stmts {
		if err := b.apply(s); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) apply(s stmt) error {
	switch s.keyword {
	case "JOB", "FINAL", "SERVICE", "SUBDAG", "SPLICE":
		return nil
	case "PARENT":
		return b.parent(s)
	case "SCRIPT":
		return b.script(s)
	case "RETRY":
		return b.retry(s)
	case "VARS":
		return b.vars(s)
	case "PRIORITY":
		return b.forNodes(s, 3, func(n *Node) error {
			v, err := s.number(2)
			n.Priority = v
			return err
		})
	case "CATEGORY":
		return b.forNodes(s, 3, func(n *Node) error {
			n.Category = b.categoryName(s.fields[2])
			return nil
		})
	case "MAXJOBS":
		if len(s.fields) != 3 {
			return s.errorf(ErrSyntax, "want MAXJOBS CATEGORY N")
		}
		v, err := s.number(2)
		if err != nil {
			return err
		}
		if v < 0 {
			return s.errorf(ErrNumber, "MAXJOBS %d is negative", v)
		}
		b.dag.MaxJobs[b.categoryName(s.fields[1])] = v
		return nil
	case "ABORT-DAG-ON":
		return b.abortOn(s)
	case "PRE_SKIP":
		return b.forNodes(s, 3, func(n *Node) error {
			v, err := s.number(2)
			n.PreSkip = &v
			return err
		})
	case "DONE":
		if len(s.fields) != 2 {
			return s.errorf(ErrSyntax, "want DONE NODE")
		}
		n, err := b.node(s, s.fields[1])
		if err == nil {
			n.Done = true
		}
		return err
	case "CONFIG":
		if len(s.fields) != 2 {
			return s.errorf(ErrSyntax, "want CONFIG FILE")
		}
		if b.prefix != "" {
			return nil // DAG-wide: a splice's is ignored, as in HTCondor
		}
		if c := b.path(s.fields[1]); b.dag.Config != "" && b.dag.Config != c {
			return s.errorf(ErrSyntax, "a second CONFIG file %s (the first is %s)", c, b.dag.Config)
		} else {
			b.dag.Config = c
		}
		return nil
	case "DOT":
		return b.dot(s)
	case "NODE_STATUS_FILE":
		return b.nodeStatus(s)
	case "REJECT":
		return s.errorf(ErrRejected, "refusing to run")
	case "JOBSTATE_LOG", "SET_JOB_ATTR", "ENV", "CONNECT", "PIN_IN", "PIN_OUT", "SAVE_POINT_FILE", "PROVISIONER", "SUBMIT-DESCRIPTION":
		return s.errorf(ErrNotSupported, "%s", s.keyword)
	}
	return s.errorf(ErrKeyword, "%q", s.fields[0])
}

// defineNode reads "NAME FILE [DIR D] [NOOP] [DONE]".
func (b *builder) defineNode(s stmt, kind NodeKind, args []string) error {
	if len(args) < 2 {
		return s.errorf(ErrSyntax, "want %s NAME FILE", kind)
	}
	name, file := args[0], args[1]
	if err := checkName(s, name); err != nil {
		return err
	}
	if file == "{" || strings.HasPrefix(file, "{") {
		return s.errorf(ErrNotSupported, "inline submit descriptions")
	}
	n := &Node{Name: b.prefix + name, Kind: kind, File: file, Dir: b.dir, pos: s.pos}
	for i := 2; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "DIR":
			if i+1 == len(args) {
				return s.errorf(ErrSyntax, "DIR wants a directory")
			}
			i++
			n.Dir = b.path(args[i])
		case "NOOP":
			n.Noop = true
		case "DONE":
			if kind == FinalNode || kind == ServiceNode {
				return s.errorf(ErrSyntax, "a %s node cannot be DONE", kind)
			}
			n.Done = true
		default:
			return s.errorf(ErrSyntax, "unexpected %q after %s %s %s", args[i], kind, name, file)
		}
	}
	if kind == FinalNode {
		if b.prefix != "" {
			return s.errorf(ErrSyntax, "a spliced DAG cannot have a FINAL node")
		}
		if b.dag.Final != nil {
			return s.errorf(ErrSyntax, "a second FINAL node %s (the first is %s, %s:%d)", name, b.dag.Final.Name, b.dag.Final.pos.file, b.dag.Final.pos.line)
		}
		b.dag.Final = n
	}
	if err := b.add(s, name, n); err != nil {
		return err
	}
	if kind == JobNode || kind == SubDAGNode {
		b.own = append(b.own, n)
	}
	return nil
}

// add registers a node of the DAG under its local name.
func (b *builder) add(s stmt, local string, n *Node) error {
	if old, ok := b.dag.byName[n.Name]; ok {
		return s.errorf(ErrDuplicateNode, "%s (first defined at %s:%d)", n.Name, old.pos.file, old.pos.line)
	}
	if _, ok := b.splices[local]; ok {
		return s.errorf(ErrDuplicateNode, "%s is also a splice", local)
	}
	n.index = len(b.dag.Nodes)
	b.dag.Nodes = append(b.dag.Nodes, n)
	b.dag.byName[n.Name] = n
	b.local[local] = n
	return nil
}

// splice reads "SPLICE NAME FILE [DIR D]": the file's nodes join the DAG
// named NAME+NODE, and NAME stands for its first or last nodes in PARENT
// lines.
func (b *builder) splice(s stmt) error {
	f := s.fields
	if len(f) != 3 && (len(f) != 5 || !strings.EqualFold(f[3], "DIR")) {
		return s.errorf(ErrSyntax, "want SPLICE NAME FILE [DIR DIR]")
	}
	name := f[1]
	if err := checkName(s, name); err != nil {
		return err
	}
	if _, ok := b.splices[name]; ok {
		return s.errorf(ErrDuplicateNode, "a second splice %s", name)
	}
	if _, ok := b.local[name]; ok {
		return s.errorf(ErrDuplicateNode, "splice %s is also a node", name)
	}
	// The splice's file, and its nodes' files, are in its DIR.
	dir := b.dir
	if len(f) == 5 {
		dir = b.path(f[4])
	}
	path := f[2]
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	for _, p := range b.stack {
		if p == path {
			return s.errorf(ErrSyntax, "%s splices itself", f[2])
		}
	}
	src, err := b.opts.ReadFile(path)
	if err != nil {
		return &ParseError{File: s.file, Line: s.line, Err: fmt.Errorf("splice %s: %w", name, err)}
	}
	child := newBuilder(b.dag, b.opts, b.prefix+name+"+", dir, append(b.stack[:len(b.stack):len(b.stack)], path), b.edges)
	stmts, err := child.read(src, path)
	if err != nil {
		return err
	}
	first := len(b.dag.Nodes)
	if err := child.build(stmts); err != nil {
		return err
	}
	sp := &splice{}
	for _, n := range b.dag.Nodes[first:] {
		// Only the splice's own edges exist yet.
		if len(n.Parents) == 0 {
			sp.initial = append(sp.initial, n)
		}
		if len(n.Children) == 0 {
			sp.terminal = append(sp.terminal, n)
		}
	}
	b.splices[name] = sp
	for local, n := range child.local {
		b.local[name+"+"+local] = n
	}
	for local, csp := range child.splices {
		b.splices[name+"+"+local] = csp
	}
	return nil
}

// checkName refuses names DAGMan reserves.
func checkName(s stmt, name string) error {
	switch strings.ToUpper(name) {
	case "PARENT", "CHILD", "ALL_NODES":
		return s.errorf(ErrSyntax, "%s is a reserved word, not a node name", name)
	}
	return nil
}

// node finds a node by the name this file knows it by.
func (b *builder) node(s stmt, name string) (*Node, error) {
	if n, ok := b.local[name]; ok {
		return n, nil
	}
	return nil, s.errorf(ErrUnknownNode, "%s", name)
}

// forNodes applies set to the node named by the statement's second word,
// or to all the file's JOB and SUBDAG nodes for ALL_NODES. want is the
// number of words the statement has.
func (b *builder) forNodes(s stmt, want int, set func(*Node) error) error {
	if len(s.fields) != want {
		return s.errorf(ErrSyntax, "want %s NODE %s", s.keyword, map[string]string{
			"PRIORITY": "N", "CATEGORY": "CATEGORY", "PRE_SKIP": "EXIT_VALUE"}[s.keyword])
	}
	return b.eachNode(s, s.fields[1], set)
}

func (b *builder) eachNode(s stmt, name string, set func(*Node) error) error {
	if strings.EqualFold(name, "ALL_NODES") {
		for _, n := range b.own {
			if err := set(n); err != nil {
				return err
			}
		}
		return nil
	}
	n, err := b.node(s, name)
	if err != nil {
		return err
	}
	return set(n)
}

// parent reads "PARENT P... CHILD C...".
func (b *builder) parent(s stmt) error {
	words := s.fields[1:]
	ci := -1
	for i, w := range words {
		if strings.EqualFold(w, "CHILD") {
			ci = i
			break
		}
	}
	if ci <= 0 || ci == len(words)-1 {
		return s.errorf(ErrSyntax, "want PARENT NODE... CHILD NODE...")
	}
	var parents, children []*Node
	var err error
	if parents, err = b.ends(s, words[:ci], true); err != nil {
		return err
	}
	if children, err = b.ends(s, words[ci+1:], false); err != nil {
		return err
	}
	for _, p := range parents {
		for _, c := range children {
			if p == c {
				return s.errorf(ErrCycle, "%s is its own parent", p.Name)
			}
			key := uint64(p.index)<<32 | uint64(c.index)
			if _, dup := b.edges[key]; dup {
				continue
			}
			b.edges[key] = s.pos
			p.Children = append(p.Children, c)
			c.Parents = append(c.Parents, p)
			b.dag.Edges++
		}
	}
	return nil
}

// ends resolves the names on one side of a PARENT line; a splice stands
// for its last nodes as a parent and its first as a child.
func (b *builder) ends(s stmt, names []string, parent bool) ([]*Node, error) {
	var out []*Node
	for _, name := range names {
		if strings.EqualFold(name, "PARENT") {
			return nil, s.errorf(ErrSyntax, "PARENT twice")
		}
		if sp, ok := b.splices[name]; ok {
			if parent {
				out = append(out, sp.terminal...)
			} else {
				out = append(out, sp.initial...)
			}
			continue
		}
		n, err := b.node(s, name)
		if err != nil {
			return nil, err
		}
		if n.Kind == FinalNode || n.Kind == ServiceNode {
			return nil, s.errorf(ErrSyntax, "%s node %s cannot be a parent or a child", n.Kind, n.Name)
		}
		out = append(out, n)
	}
	return out, nil
}

// script reads "SCRIPT [DEFER STATUS TIME] [DEBUG FILE TYPE] PRE|POST|HOLD NODE EXE ARGS...".
func (b *builder) script(s stmt) error {
	f := s.fields[1:]
	sc := &Script{}
	for len(f) > 0 {
		switch strings.ToUpper(f[0]) {
		case "DEFER":
			if len(f) < 3 {
				return s.errorf(ErrSyntax, "want DEFER STATUS SECONDS")
			}
			st, err := strconv.Atoi(f[1])
			if err != nil {
				return s.errorf(ErrNumber, "DEFER status %q", f[1])
			}
			secs, err := strconv.Atoi(f[2])
			if err != nil || secs < 0 {
				return s.errorf(ErrNumber, "DEFER time %q", f[2])
			}
			sc.Defer, sc.DeferStatus, sc.DeferTime = true, st, time.Duration(secs)*time.Second
			f = f[3:]
			continue
		case "DEBUG":
			return s.errorf(ErrNotSupported, "SCRIPT DEBUG")
		}
		break
	}
	if len(f) < 3 {
		return s.errorf(ErrSyntax, "want SCRIPT PRE|POST|HOLD NODE EXECUTABLE [ARGUMENTS]")
	}
	kind := strings.ToUpper(f[0])
	if kind != "PRE" && kind != "POST" && kind != "HOLD" {
		return s.errorf(ErrSyntax, "script type %q: want PRE, POST or HOLD", f[0])
	}
	// The arguments are the rest of the line after the executable,
	// split as the shell would split plain words and double quotes.
	rest := s.text
	for _, w := range s.fields[:len(s.fields)-len(f)+3] {
		rest = strings.TrimLeft(rest, " \t")
		rest = rest[len(w):]
	}
	args, err := splitArgs(rest)
	if err != nil {
		return s.errorf(ErrSyntax, "%v", err)
	}
	sc.Exe, sc.Args = f[2], args
	return b.eachNode(s, f[1], func(n *Node) error {
		switch kind {
		case "PRE":
			n.Pre = sc
		case "POST":
			n.Post = sc
		default:
			n.Hold = sc
		}
		return nil
	})
}

// splitArgs splits script arguments at white space; double quotes group
// words, and a backslash makes a quote or a backslash literal.
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			in, have = !in, true
		case !in && (c == ' ' || c == '\t'):
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if in {
		return nil, errors.New("unterminated quote in the script's arguments")
	}
	if have {
		out = append(out, cur.String())
	}
	return out, nil
}

// retry reads "RETRY NODE N [UNLESS-EXIT V]".
func (b *builder) retry(s stmt) error {
	f := s.fields
	if len(f) != 3 && (len(f) != 5 || !strings.EqualFold(f[3], "UNLESS-EXIT")) {
		return s.errorf(ErrSyntax, "want RETRY NODE N [UNLESS-EXIT VALUE]")
	}
	n, err := s.number(2)
	if err != nil {
		return err
	}
	if n < 0 {
		return s.errorf(ErrNumber, "RETRY %d is negative", n)
	}
	var unless *int
	if len(f) == 5 {
		v, err := s.number(4)
		if err != nil {
			return err
		}
		unless = &v
	}
	return b.eachNode(s, f[1], func(node *Node) error {
		node.Retries, node.UnlessExit = n, unless
		return nil
	})
}

// abortOn reads "ABORT-DAG-ON NODE VALUE [RETURN R]".
func (b *builder) abortOn(s stmt) error {
	f := s.fields
	if len(f) != 3 && (len(f) != 5 || !strings.EqualFold(f[3], "RETURN")) {
		return s.errorf(ErrSyntax, "want ABORT-DAG-ON NODE VALUE [RETURN R]")
	}
	v, err := s.number(2)
	if err != nil {
		return err
	}
	a := AbortOn{Value: v, Return: v}
	if len(f) == 5 {
		if a.Return, err = s.number(4); err != nil {
			return err
		}
		if a.Return < 0 || a.Return > 255 {
			return s.errorf(ErrNumber, "RETURN %d is not 0 to 255", a.Return)
		}
	}
	return b.eachNode(s, f[1], func(n *Node) error {
		n.AbortOn = &a
		return nil
	})
}

// vars reads `VARS NODE [PREPEND|APPEND] NAME="VALUE" ...`. A value is in
// double quotes; inside, \" is a quote and \\ a backslash.
func (b *builder) vars(s stmt) error {
	if len(s.fields) < 3 {
		return s.errorf(ErrSyntax, `want VARS NODE NAME="VALUE" ...`)
	}
	rest := strings.TrimLeft(s.text[len(s.fields[0]):], " \t")
	rest = strings.TrimLeft(rest[len(s.fields[1]):], " \t")
	appendVars := false
	if w := s.fields[2]; strings.EqualFold(w, "PREPEND") || strings.EqualFold(w, "APPEND") {
		appendVars = strings.EqualFold(w, "APPEND")
		rest = rest[len(w):]
	}
	vars, err := parseVars(rest, appendVars)
	if err != nil {
		return s.errorf(ErrSyntax, "%v", err)
	}
	return b.eachNode(s, s.fields[1], func(n *Node) error {
		n.Vars = append(n.Vars, vars...)
		return nil
	})
}

func parseVars(s string, appendVars bool) ([]Var, error) {
	var out []Var
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf(`want NAME="VALUE" at %q`, s)
		}
		name := strings.TrimSpace(s[:eq])
		if !validVarName(name) {
			return nil, fmt.Errorf("bad macro name %q", name)
		}
		if strings.HasPrefix(strings.ToLower(name), "queue") {
			return nil, fmt.Errorf("macro names may not begin with queue (%q)", name)
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		if s == "" || s[0] != '"' {
			return nil, fmt.Errorf("the value of %s must be in double quotes", name)
		}
		var v strings.Builder
		i, closed := 1, false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				i++
				v.WriteByte(s[i])
				continue
			}
			if c == '"' {
				closed = true
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, fmt.Errorf("the value of %s has no closing quote", name)
		}
		out = append(out, Var{Name: name, Value: v.String(), Append: appendVars})
		s = s[i+1:]
	}
	if len(out) == 0 {
		return nil, errors.New(`want NAME="VALUE" pairs`)
	}
	return out, nil
}

// validVarName accepts submit macro names, and +Attr or My.Attr for an
// attribute of the job ad.
func validVarName(name string) bool {
	name = strings.TrimPrefix(name, "+")
	if l := strings.ToLower(name); strings.HasPrefix(l, "my.") {
		name = name[3:]
	}
	if name == "" {
		return false
	}
	for i, c := range name {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '.') {
			continue
		}
		return false
	}
	return true
}

// dot reads "DOT FILE [UPDATE|DONT-UPDATE] [OVERWRITE|DONT-OVERWRITE] [INCLUDE FILE]".
func (b *builder) dot(s stmt) error {
	f := s.fields
	if len(f) < 2 {
		return s.errorf(ErrSyntax, "want DOT FILE [options]")
	}
	d := &DotSpec{File: b.path(f[1]), Overwrite: true}
	for i := 2; i < len(f); i++ {
		switch strings.ToUpper(f[i]) {
		case "UPDATE":
			d.Update = true
		case "DONT-UPDATE":
			d.Update = false
		case "OVERWRITE":
			d.Overwrite = true
		case "DONT-OVERWRITE":
			d.Overwrite = false
		case "INCLUDE":
			if i+1 == len(f) {
				return s.errorf(ErrSyntax, "INCLUDE wants a file")
			}
			i++
			d.Include = b.path(f[i])
		default:
			return s.errorf(ErrSyntax, "unexpected %q in DOT", f[i])
		}
	}
	if b.prefix == "" {
		b.dag.Dot = d
	}
	return nil
}

// nodeStatus reads "NODE_STATUS_FILE FILE [MIN_SECONDS] [ALWAYS-UPDATE]".
func (b *builder) nodeStatus(s stmt) error {
	f := s.fields
	if len(f) < 2 || len(f) > 4 {
		return s.errorf(ErrSyntax, "want NODE_STATUS_FILE FILE [SECONDS] [ALWAYS-UPDATE]")
	}
	ns := &NodeStatusSpec{File: b.path(f[1]), MinUpdate: 60 * time.Second}
	for _, w := range f[2:] {
		if strings.EqualFold(w, "ALWAYS-UPDATE") {
			ns.AlwaysUpdate = true
			continue
		}
		secs, err := strconv.Atoi(w)
		if err != nil || secs < 0 {
			return s.errorf(ErrNumber, "update time %q", w)
		}
		ns.MinUpdate = time.Duration(secs) * time.Second
	}
	if b.prefix == "" {
		b.dag.NodeStatus = ns
	}
	return nil
}

// categoryName scopes a category to its splice, as HTCondor does, unless
// it starts with "+" (a category shared by the whole DAG).
func (b *builder) categoryName(c string) string {
	if strings.HasPrefix(c, "+") {
		return c[1:]
	}
	return b.prefix + c
}

// number reads field i as an integer.
func (s stmt) number(i int) (int, error) {
	if i >= len(s.fields) {
		return 0, s.errorf(ErrSyntax, "%s wants a number", s.keyword)
	}
	v, err := strconv.Atoi(s.fields[i])
	if err != nil {
		return 0, s.errorf(ErrNumber, "%q", s.fields[i])
	}
	return v, nil
}

func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", err, fmt.Sprintf(format, args...))
}
