// Package childproc is how a Harrier daemon steers a child process it
// starts for a job — the agent its shadows, the startd its starters: typed
// commands go to the child's standard input and typed events come back on
// its standard output, one JSON value per line. Signals are used only to
// kill a child that no longer listens.
package childproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxMessage bounds one message, so that a child (or a parent) writing
// garbage without a newline cannot make the other side buffer without end.
// Job ads are the largest thing sent.
const MaxMessage = 64 << 20

// Sender writes messages of type T to a stream. Its Send may be called from
// several goroutines: each message is written whole.
type Sender[T any] struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSender returns a Sender writing to w.
func NewSender[T any](w io.Writer) *Sender[T] { return &Sender[T]{w: w} }

// Send writes m as one line.
func (s *Sender[T]) Send(m T) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %T: %w", m, err)
	}
	if len(b) >= MaxMessage {
		return fmt.Errorf("encode %T: %d bytes, over the limit of %d", m, len(b), MaxMessage)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("send %T: %w", m, err)
	}
	return nil
}

// Receiver reads messages of type T from a stream. It is for one goroutine.
type Receiver[T any] struct {
	sc *bufio.Scanner
}

// NewReceiver returns a Receiver reading from r.
func NewReceiver[T any](r io.Reader) *Receiver[T] {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxMessage)
	return &Receiver[T]{sc: sc}
}

// Receive returns the next message. At the end of the stream it returns
// io.EOF; a line that is not a T, or is too long, is an error that names
// what was wrong, and the stream is of no further use.
func (r *Receiver[T]) Receive() (T, error) {
	var m T
	if !r.sc.Scan() {
		err := r.sc.Err()
		switch {
		case err == nil:
			return m, io.EOF
		case errors.Is(err, bufio.ErrTooLong):
			return m, fmt.Errorf("receive %T: a message over %d bytes", m, MaxMessage)
		default:
			return m, fmt.Errorf("receive %T: %w", m, err)
		}
	}
	if err := json.Unmarshal(r.sc.Bytes(), &m); err != nil {
		return m, fmt.Errorf("receive %T: %w", m, err)
	}
	return m, nil
}
