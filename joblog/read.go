package joblog

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Read parses a job event log. It returns the events it could read and an
// error naming the line of the first malformed event; a final event
// without its terminator (a log being written) is not returned.
func Read(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var (
		events []Event
		cur    *Event
		body   []string
		line   int
	)
	for sc.Scan() {
		line++
		text := sc.Text()
		if cur == nil {
			if strings.TrimSpace(text) == "" {
				continue
			}
			e, err := parseHeader(text)
			if err != nil {
				return events, fmt.Errorf("line %d: %w", line, err)
			}
			cur, body = &e, nil
			body = append(body, headerRest(text))
			continue
		}
		if text == "..." {
			fillBody(cur, body)
			events = append(events, *cur)
			cur = nil
			continue
		}
		body = append(body, text)
	}
	if err := sc.Err(); err != nil {
		return events, fmt.Errorf("read job event log: %w", err)
	}
	return events, nil
}

// parseHeader reads "TTT (CCC.PPP.SSS) YYYY-MM-DD HH:MM:SS text".
func parseHeader(s string) (Event, error) {
	var e Event
	if len(s) < 4 || s[3] != ' ' {
		return e, fmt.Errorf("malformed event header %q", s)
	}
	t, err := strconv.Atoi(s[:3])
	if err != nil {
		return e, fmt.Errorf("malformed event number in %q", s)
	}
	e.Type = Type(t)
	rest := s[4:]
	if !strings.HasPrefix(rest, "(") {
		return e, fmt.Errorf("malformed job id in %q", s)
	}
	end := strings.IndexByte(rest, ')')
	if end < 0 {
		return e, fmt.Errorf("malformed job id in %q", s)
	}
	parts := strings.Split(rest[1:end], ".")
	if len(parts) != 3 {
		return e, fmt.Errorf("malformed job id in %q", s)
	}
	if e.Cluster, err = strconv.Atoi(parts[0]); err != nil {
		return e, fmt.Errorf("malformed cluster in %q", s)
	}
	if e.Proc, err = strconv.Atoi(parts[1]); err != nil {
		return e, fmt.Errorf("malformed proc in %q", s)
	}
	rest = strings.TrimPrefix(rest[end+1:], " ")
	if len(rest) < len(timeLayout) {
		return e, fmt.Errorf("malformed time in %q", s)
	}
	if e.Time, err = time.ParseInLocation(timeLayout, rest[:len(timeLayout)], time.Local); err != nil {
		return e, fmt.Errorf("malformed time in %q", s)
	}
	return e, nil
}

func headerRest(s string) string {
	i := strings.IndexByte(s, ')')
	rest := strings.TrimPrefix(s[i+1:], " ")
	if len(rest) >= len(timeLayout) {
		rest = strings.TrimPrefix(rest[len(timeLayout):], " ")
	}
	return rest
}

// fillBody reads the fields an event's text carries.
func fillBody(e *Event, body []string) {
	head := body[0]
	if i := strings.Index(head, "<"); i >= 0 && strings.HasSuffix(head, ">") {
		e.Host = head[i+1 : len(head)-1]
	}
	for _, l := range body[1:] {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "(1) Normal termination (return value "):
			e.Normal = true
			e.ReturnValue, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(t, "(1) Normal termination (return value "), ")"))
		case strings.HasPrefix(t, "(0) Abnormal termination (signal "):
			e.Signal, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(t, "(0) Abnormal termination (signal "), ")"))
		case strings.HasPrefix(t, "Code ") && e.Type == Held:
			fmt.Sscanf(t, "Code %d Subcode %d", &e.Code, &e.Subcode)
		case t == "(1) Job was checkpointed.":
			e.WasCheckpointed = true
		case strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\t\t") && e.Reason == "" &&
			(e.Type == Aborted || e.Type == Held || e.Type == Released || e.Type == Evicted || e.Type == ShadowException || e.Type == ExecutableError) &&
			!strings.HasPrefix(t, "(") && !strings.Contains(t, "  -  "):
			e.Reason = t
		}
	}
}
