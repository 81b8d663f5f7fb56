package submit

import "fmt"

// An Error is a problem in a submit description. Parse and Jobs return every
// error they detect in the description as an *Error.
type Error struct {
	File string // the file name given to Parse
	Line int    // 1-based line of the offending statement, 0 for the whole file
	Err  error  // what is wrong
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
