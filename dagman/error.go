package dagman

import (
	"errors"
	"fmt"
)

// A ParseError is a problem in a DAG file, an included or spliced file, or
// a rescue DAG. Nothing of a DAG that fails to parse runs.
type ParseError struct {
	File string // the file as named to the parser or by the including line
	Line int    // 1-based; 0 for the file as a whole
	Err  error
}

func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Errors a ParseError wraps, for callers and tests to tell apart.
var (
	ErrUnknownNode   = errors.New("unknown node")
	ErrDuplicateNode = errors.New("duplicate node")
	ErrCycle         = errors.New("cycle")
	ErrKeyword       = errors.New("unknown keyword")
	ErrNumber        = errors.New("bad number")
	ErrSyntax        = errors.New("syntax error")
	ErrNotSupported  = errors.New("not supported by Harrier yet")
	ErrRejected      = errors.New("the DAG file says REJECT")
)
