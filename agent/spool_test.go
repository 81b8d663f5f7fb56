package agent

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// spoolStream plays a spooled submission's messages after the first.
type spoolStream struct {
	grpc.ServerStream
	msgs []*wire.SpoolRequest
}

func (s *spoolStream) Recv() (*wire.SpoolRequest, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

func (s *spoolStream) SendAndClose(*wire.SubmitReply) error { return nil }

func fileChunk(proc int32, name, data string) *wire.SpoolRequest {
	sum := sha256.Sum256([]byte(data))
	return &wire.SpoolRequest{Proc: proc, Chunk: &wire.TransferChunk{
		Entry: &wire.TransferEntry{Name: name, Kind: wire.TransferEntry_FILE, Size: int64(len(data)), Mode: 0o644},
		Data:  []byte(data), Sha256: sum[:]}}
}

func linkChunk(proc int32, name, target string) *wire.SpoolRequest {
	return &wire.SpoolRequest{Proc: proc, Chunk: &wire.TransferChunk{
		Entry: &wire.TransferEntry{Name: name, Kind: wire.TransferEntry_SYMLINK, Link: target}}}
}

// TestReceiveSpoolConfined: a spooled submission's inputs land in their
// job's directory of the incoming one, and only there: names that climb
// out or are absolute, links that lead out, inputs for a job the
// submission does not hold and jobs out of order are refused, and
// nothing is written beside the incoming directory.
func TestReceiveSpoolConfined(t *testing.T) {
	procs := []spooledJob{{proc: 0}, {proc: 1}}
	good := []*wire.SpoolRequest{fileChunk(0, "a.txt", "zero\n"), fileChunk(0, "d/b.txt", "deep\n"),
		linkChunk(0, "d/up", "../a.txt"), fileChunk(1, "a.txt", "one\n")}
	base := t.TempDir()
	incoming := filepath.Join(base, "in")
	if err := os.Mkdir(incoming, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := receiveSpool(&spoolStream{msgs: good}, incoming, procs); err != nil {
		t.Fatalf("receive a good submission: %v", err)
	}
	for name, want := range map[string]string{"0/a.txt": "zero\n", "0/d/b.txt": "deep\n", "0/d/up": "zero\n", "1/a.txt": "one\n"} {
		if b, err := os.ReadFile(filepath.Join(incoming, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}

	for name, msgs := range map[string][]*wire.SpoolRequest{
		"climbs":       {fileChunk(0, "../escaped", "x")},
		"deep climb":   {fileChunk(0, "d/../../escaped", "x")},
		"absolute":     {fileChunk(0, filepath.Join(base, "escaped"), "x")},
		"link out":     {linkChunk(0, "l", "../../escaped")},
		"link abs":     {linkChunk(0, "l", "/etc/passwd")},
		"unknown job":  {fileChunk(7, "a.txt", "x")},
		"out of order": {fileChunk(1, "a.txt", "x"), fileChunk(0, "a.txt", "x")},
		"resubmit":     {{Submit: &wire.SubmitRequest{}}},
		"over limit":   {fileChunk(1, "a.txt", "x"), fileChunk(1, "b.txt", string(make([]byte, 1<<20)))},
	} {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "in")
			if err := os.Mkdir(in, 0o700); err != nil {
				t.Fatal(err)
			}
			limited := []spooledJob{{proc: 0}, {proc: 1, limit: 1 << 20}}
			if err := receiveSpool(&spoolStream{msgs: msgs}, in, limited); err == nil {
				t.Errorf("accepted")
			}
			for _, p := range []string{filepath.Join(filepath.Dir(in), "escaped"), filepath.Join(base, "escaped")} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s written: %v", p, err)
				}
			}
			// A refused stream stops its writers before it returns: no
			// file on the way is left, nor written after.
			_ = filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), ".harrier-transfer-") {
					t.Errorf("left on the way: %s", p)
				}
				return err
			})
		})
	}
}

// TestSpooledJobStaysUntilFetched: a completed spooled job waits in the
// queue while its LeaveJobInQueue holds and its outputs are not
// fetched; a job submitted without -spool stays while its
// LeaveJobInQueue (leave_in_queue) holds.
func TestSpooledJobStaysUntilFetched(t *testing.T) {
	ad := func(src string) *classad.ClassAd {
		a, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	leave := `LeaveJobInQueue = JobStatus == 4 && (CompletionDate =?= undefined || (time() - CompletionDate) < 864000);`
	for src, want := range map[string]bool{
		`[ JobStatus = 4; StageInFinish = 5; ` + leave + ` ]`:                     true,
		`[ JobStatus = 4; StageInFinish = 5; CompletionDate = 1; ` + leave + ` ]`: false, // expired
		`[ JobStatus = 4; StageInFinish = 5; StageOutFinish = 9; ` + leave + ` ]`: false,
		`[ JobStatus = 4; ` + leave + ` ]`:                                        true,
		`[ JobStatus = 4; StageOutFinish = 9; ` + leave + ` ]`:                    true, // not spooled: nothing to fetch
		`[ JobStatus = 4; CompletionDate = 1; ` + leave + ` ]`:                    false,
		`[ JobStatus = 3; StageInFinish = 5; ` + leave + ` ]`:                     false,
		`[ JobStatus = 4; StageInFinish = 5; LeaveJobInQueue = false ]`:           false,
	} {
		if got := keptInQueue(ad(src)); got != want {
			t.Errorf("%s: kept %v, want %v", src, got, want)
		}
	}
	// Only the agent marks a job spooled.
	a := ad(`[ StageInFinish = 5; StageInStart = 4; StageOutFinish = 3 ]`)
	(*stageIn)(nil).mark(a)
	for _, name := range []string{AttrStageInFinish, AttrStageInStart, AttrStageOutFinish} {
		if _, ok := a.Lookup(name); ok {
			t.Errorf("a submitted %s survived", name)
		}
	}
}
