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
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	var p parser
	for sc.Scan() {
		if err := p.line(sc.Text()); err != nil {
			return p.events, err
		}
	}
	if err := sc.Err(); err != nil {
		return p.events, fmt.Errorf("read job event log: %w", err)
	}
	return p.events, nil
}

// Parse is Read of log text in memory. It copies data once rather than
// line by line, for a reader that follows a growing log a few events at a
// time.
func Parse(data []byte) ([]Event, error) {
	var p parser
	s := string(data)
	for s != "" {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if err := p.line(strings.TrimSuffix(line, "\r")); err != nil {
			return p.events, err
		}
	}
	return p.events, nil
}

// parser gathers events from a log's lines.
type parser struct {
	events []Event
	cur    *Event
	body   []string
	n      int // lines read
}

func (p *parser) line(text string) error {
	p.n++
	if p.cur == nil {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		e, err := parseHeader(text)
		if err != nil {
			return fmt.Errorf("line %d: %w", p.n, err)
		}
		p.cur = &e
		p.body = append(p.body[:0], headerRest(text))
		return nil
	}
	if text == "..." {
		fillBody(p.cur, p.body)
		p.events = append(p.events, *p.cur)
		p.cur = nil
		return nil
	}
	p.body = append(p.body, text)
	return nil
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
	if e.Time, err = parseTime(rest); err != nil {
		return e, fmt.Errorf("malformed time in %q", s)
	}
	return e, nil
}

// oldTimeLayout is the date form of HTCondor before 9.0, without a year.
const oldTimeLayout = "01/02 15:04:05"

// parseTime reads the time at the start of s in either layout. An old-style
// time is taken to be in the current year.
func parseTime(s string) (time.Time, error) {
	if len(s) >= len(timeLayout) && s[4] == '-' {
		return time.ParseInLocation(timeLayout, s[:len(timeLayout)], time.Local)
	}
	if len(s) < len(oldTimeLayout) || s[2] != '/' {
		return time.Time{}, fmt.Errorf("no time in %q", s)
	}
	t, err := time.ParseInLocation(oldTimeLayout, s[:len(oldTimeLayout)], time.Local)
	if err != nil {
		return time.Time{}, err
	}
	return t.AddDate(time.Now().Year()-t.Year(), 0, 0), nil
}

func headerRest(s string) string {
	i := strings.IndexByte(s, ')')
	rest := strings.TrimPrefix(s[i+1:], " ")
	n := len(timeLayout)
	if len(rest) > 2 && rest[2] == '/' {
		n = len(oldTimeLayout)
	}
	if len(rest) >= n {
		rest = strings.TrimPrefix(rest[n:], " ")
	}
	return rest
}

// fillBody reads the fields an event's text carries.
func fillBody(e *Event, body []string) {
	head := body[0]
	switch e.Type {
	case Submit, Execute:
		if i := strings.Index(head, "<"); i >= 0 && strings.HasSuffix(head, ">") {
			e.Host = head[i+1 : len(head)-1]
		}
	case ExecutableError:
		fmt.Sscanf(head, "(%d)", &e.ErrorKind)
	case FileTransfer:
		e.Transfer.Output = strings.Contains(head, "output")
		e.Transfer.Finished = strings.HasPrefix(strings.TrimSpace(head), "Finished")
	case JobReconnected:
		e.Host = strings.TrimPrefix(strings.TrimSpace(head), "Job reconnected to ")
	case ImageSize:
		e.ImageSizeKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(head, "Image size of job updated:")), 10, 64)
	case JobAdInformation:
		var ad strings.Builder
		for _, l := range body[1:] {
			if l = strings.TrimSpace(l); l != "" {
				ad.WriteString(l)
				ad.WriteByte('\n')
			}
		}
		e.Ad = ad.String()
		return
	}
	inFiles := false
	for _, l := range body[1:] {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), dagNodeLabel); ok {
			e.DAGNode = name
			continue
		}
		if e.Type == Submit {
			if notes := strings.TrimSpace(l); notes != "" {
				e.Notes = notes
			}
			continue
		}
		if f, ok := strings.CutPrefix(l, "\t\t"); ok && inFiles {
			e.Files += f + "\n"
			continue
		}
		t := strings.TrimSpace(l)
		if value, label, ok := strings.Cut(t, "  -  "); ok {
			inFiles = label == filesLabel
			fillCounter(e, strings.TrimSpace(value), label)
			continue
		}
		inFiles = false
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
		case strings.HasPrefix(t, "Trying to reconnect to ") && e.Type == JobDisconnected:
			e.Host = strings.TrimPrefix(t, "Trying to reconnect to ")
		case strings.HasPrefix(t, "Can not reconnect to ") && e.Type == JobReconnectFailed:
			e.Host = strings.TrimSuffix(strings.TrimPrefix(t, "Can not reconnect to "), ", rescheduling job")
		case strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\t\t") && e.Reason == "" &&
			(e.Type == Aborted || e.Type == Held || e.Type == Released || e.Type == Evicted || e.Type == ShadowException || e.Type == ExecutableError || e.Type == Execute ||
				e.Type == JobDisconnected || e.Type == JobReconnectFailed) &&
			!strings.HasPrefix(t, "(") && !strings.Contains(t, "  -  "):
			e.Reason = t
		}
	}
}

// fillCounter reads a "value  -  label" line: CPU usage or a byte or memory
// count.
func fillCounter(e *Event, value, label string) {
	n, _ := strconv.ParseInt(value, 10, 64)
	switch label {
	case "Run Remote Usage":
		var ud, uh, um, us, sd, sh, sm, ss int64
		if _, err := fmt.Sscanf(value, "Usr %d %d:%d:%d, Sys %d %d:%d:%d", &ud, &uh, &um, &us, &sd, &sh, &sm, &ss); err == nil {
			e.UserCPU = float64(((ud*24+uh)*60+um)*60 + us)
			e.SysCPU = float64(((sd*24+sh)*60+sm)*60 + ss)
		}
	case "Run Bytes Sent By Job":
		e.BytesSent = n
	case "Run Bytes Received By Job":
		e.BytesReceived = n
	case "Total Bytes Sent By Job":
		e.TotalBytesSent = n
	case "Total Bytes Received By Job":
		e.TotalBytesReceived = n
	case bytesTransferred:
		e.Transfer.Bytes = n
	case filesTransferred:
		e.Transfer.Files = int(n)
	case "MemoryUsage of job (MB)":
		e.MemoryUsageMB = n
	case "ResidentSetSize of job (KB)":
		e.ResidentSetSizeKB = n
	}
}
