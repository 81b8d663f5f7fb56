package starter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/starter"
)

// fakeRunner runs jobs in memory. A job's executable, as the starter
// fetched it from the shadow, is a little program the fake interprets one
// line at a time:
//
//	stdout TEXT   writes TEXT and a newline to the job's standard output
//	stderr TEXT   the same to its standard error
//	exit N        ends the job with exit code N (the end of the program: 0)
//	cat           copies the job's standard input to its standard output
//	wait          blocks until the test releases the job or a signal ends it
//	open PATH N   holds PATH open, a file of N bytes, as CRIU records it
//
// A checkpoint's image holds what is left of the program, and a restore
// runs that: a job vacated at its wait goes on after it elsewhere.
type fakeRunner struct {
	// restoreErr, if set, is what Restore fails with.
	restoreErr error
	// checkpointErr, if set, is what a job's Checkpoint fails with.
	checkpointErr error
	// jobs receives every job started or restored, in order.
	jobs chan *fakeJob
	pids atomic.Int32
}

func newFakeRunner() *fakeRunner { return &fakeRunner{jobs: make(chan *fakeJob, 16)} }

// Compile-time checks: the fake offers what a container runner does.
var (
	_ starter.Runner       = (*fakeRunner)(nil)
	_ starter.Restorer     = (*fakeRunner)(nil)
	_ starter.Checkpointer = (*fakeJob)(nil)
	_ starter.Restored     = (*restoredJob)(nil)
)

// imageFile is the memory of a fake checkpoint image: the rest of the
// program.
const imageFile = "pages-1.img"

func (r *fakeRunner) Start(_ context.Context, t *starter.Task) (starter.Job, error) {
	prog, err := os.ReadFile(t.Path)
	if err != nil {
		return nil, fmt.Errorf("fake runner: %w", err)
	}
	j, err := r.launch(t, string(prog))
	if err != nil {
		return nil, err
	}
	if r.checkpointErr != nil {
		return failingCheckpoints{j, r.checkpointErr}, nil
	}
	return j, nil
}

func (r *fakeRunner) Restore(_ context.Context, t *starter.Task, imageDir string) (starter.Job, error) {
	if r.restoreErr != nil {
		if t.Stdin != nil {
			// As a CRIU that failed may leave it: where the dumped job was.
			if _, err := t.Stdin.Seek(0, io.SeekEnd); err != nil {
				return nil, err
			}
		}
		return nil, r.restoreErr
	}
	prog, err := os.ReadFile(filepath.Join(imageDir, imageFile))
	if err != nil {
		return nil, fmt.Errorf("fake restore: %w", err)
	}
	j, err := r.launch(t, string(prog))
	if err != nil {
		return nil, err
	}
	return &restoredJob{j}, nil
}

// launch runs prog as a new job of task t.
func (r *fakeRunner) launch(t *starter.Task, prog string) (*fakeJob, error) {
	// The job's own copies of its output pipes, as a child process has:
	// the starter closes its copies once the job has started.
	stdout, err := dup(t.Stdout)
	if err != nil {
		return nil, err
	}
	stderr, err := dup(t.Stderr)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	j := &fakeJob{
		task:    t,
		stdin:   t.Stdin,
		stdout:  stdout,
		stderr:  stderr,
		pid:     4000 + int(r.pids.Add(1)),
		signals: make(chan unix.Signal, 8),
		release: make(chan struct{}, 1),
		ended:   make(chan struct{}),
	}
	sc := bufio.NewScanner(strings.NewReader(prog))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			j.program = append(j.program, line)
		}
	}
	j.started.Add(1)
	go j.run()
	j.started.Wait() // the first lines up to a wait have run, as a real job would soon
	r.jobs <- j
	return j, nil
}

func dup(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fake runner: dup %s: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// fakeJob is a job of fakeRunner.
type fakeJob struct {
	task    *starter.Task
	stdin   *os.File // nil: no input
	stdout  *os.File
	stderr  *os.File
	pid     int
	program []string
	started sync.WaitGroup

	signals chan unix.Signal
	release chan struct{}
	ended   chan struct{}

	mu        sync.Mutex
	pc        int // the next line to run
	inputs    []checkpoint.Input
	exit      starter.Exit
	suspends  int
	continues int
	received  []unix.Signal
	stopped   bool // suspended
	// stoppedAtDump: a checkpoint found the job suspended.
	stoppedAtDump bool
}

// run interprets the program, then closes the job's output as its exit
// would.
func (j *fakeJob) run() {
	once := sync.OnceFunc(j.started.Done)
	defer once()
	defer close(j.ended)
	defer j.stderr.Close()
	defer j.stdout.Close()
	for {
		j.mu.Lock()
		if j.pc >= len(j.program) {
			j.mu.Unlock()
			return
		}
		line := j.program[j.pc]
		j.pc++
		j.mu.Unlock()
		op, arg, _ := strings.Cut(line, " ")
		switch op {
		case "stdout":
			fmt.Fprintln(j.stdout, arg)
		case "stderr":
			fmt.Fprintln(j.stderr, arg)
		case "open":
			path, size, _ := strings.Cut(arg, " ")
			n, _ := strconv.ParseInt(size, 10, 64)
			j.mu.Lock()
			j.inputs = append(j.inputs, checkpoint.Input{Path: path, Size: n})
			j.mu.Unlock()
		case "cat":
			if j.stdin != nil {
				_, _ = io.Copy(j.stdout, j.stdin)
			}
		case "exit":
			n, _ := strconv.Atoi(arg)
			j.setExit(starter.Exit{Code: n})
			return
		case "wait":
			once()
			select {
			case <-j.release:
			case sig := <-j.signals:
				j.setExit(starter.Exit{Signal: int(sig)})
				return
			}
		}
	}
}

func (j *fakeJob) setExit(x starter.Exit) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.exit = x
}

// Release lets a job blocked at its wait go on.
func (j *fakeJob) Release() { j.release <- struct{}{} }

// Received returns the signals the starter sent to the job.
func (j *fakeJob) Received() []unix.Signal {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]unix.Signal(nil), j.received...)
}

func (j *fakeJob) Pid() int { return j.pid }

// Signal ends a waiting job with any signal but the stop and continue
// ones, as a program that handles none would end.
func (j *fakeJob) Signal(sig unix.Signal) error {
	j.mu.Lock()
	j.received = append(j.received, sig)
	j.mu.Unlock()
	switch sig {
	case unix.SIGSTOP, unix.SIGCONT, 0:
		return nil
	}
	select {
	case j.signals <- sig:
	default:
	}
	return nil
}

func (j *fakeJob) Suspend() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stopped {
		return errors.New("fake job: already suspended")
	}
	j.stopped = true
	j.suspends++
	return nil
}

func (j *fakeJob) Continue() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stopped = false
	j.continues++
	return nil
}

// Counts returns how often the job was suspended and continued.
func (j *fakeJob) Counts() (suspends, continues int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.suspends, j.continues
}

func (j *fakeJob) Wait() (starter.Exit, error) {
	<-j.ended
	j.mu.Lock()
	defer j.mu.Unlock()
	x := j.exit
	x.Usage = starter.Usage{UserCPU: 1.5, SysCPU: 0.25, MaxRSSBytes: 1 << 20}
	return x, nil
}

func (j *fakeJob) Usage() (starter.Usage, error) { return starter.Usage{MemoryBytes: 1 << 20}, nil }

// Checkpoint writes the rest of the program as the image; unless
// leaveRunning, the job ends with the dump, killed as CRIU leaves it.
func (j *fakeJob) Checkpoint(_ context.Context, imageDir string, leaveRunning bool) (starter.CheckpointStats, error) {
	if err := os.Mkdir(imageDir, 0o700); err != nil {
		return starter.CheckpointStats{}, err
	}
	j.mu.Lock()
	j.stoppedAtDump = j.stoppedAtDump || j.stopped
	rest := strings.Join(j.program[j.pc:], "\n")
	info, err := json.Marshal(checkpoint.Result{Inputs: j.inputs})
	j.mu.Unlock()
	if err != nil {
		return starter.CheckpointStats{}, err
	}
	if err := os.WriteFile(filepath.Join(imageDir, imageFile), []byte(rest), 0o600); err != nil {
		return starter.CheckpointStats{}, err
	}
	// The dump's information, which the shadow reads from the stored
	// image: the files the job held open, whose sizes a restore needs.
	if err := os.WriteFile(filepath.Join(imageDir, checkpoint.InfoName), info, 0o600); err != nil {
		return starter.CheckpointStats{}, err
	}
	if !leaveRunning {
		select {
		case j.signals <- unix.SIGKILL:
		default:
		}
	}
	return starter.CheckpointStats{Frozen: time.Millisecond, Dump: 2 * time.Millisecond, ImageBytes: int64(len(rest))}, nil
}

// restoredJob is a fakeJob brought back from an image.
type restoredJob struct{ *fakeJob }

func (restoredJob) RestoreTime() time.Duration { return 30 * time.Millisecond }

// failingCheckpoints is a fakeJob whose checkpoints fail.
type failingCheckpoints struct {
	*fakeJob
	err error
}

func (f failingCheckpoints) Checkpoint(context.Context, string, bool) (starter.CheckpointStats, error) {
	return starter.CheckpointStats{}, f.err
}

var _ starter.Execer = (*fakeJob)(nil)

// Exec starts a process in the fake job, itself a little program named
// by its first argument:
//
//	cat        copies its input to its output, then exits 0
//	echo ARGS  writes ARGS and a newline to its output
//	exit N     ends with exit code N
//	wait       blocks until killed, or until the job ends
//
// Only pipes: the fake has no terminals.
func (j *fakeJob) Exec(_ context.Context, e *starter.ExecTask) (starter.Process, error) {
	if e.TTY {
		return nil, errors.New("fake job: no terminals")
	}
	var files [3]*os.File
	for i, f := range []*os.File{e.Stdin, e.Stdout, e.Stderr} {
		d, err := dup(f)
		if err != nil {
			return nil, err
		}
		files[i] = d
	}
	p := &fakeProcess{killed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		switch e.Args[0] {
		case "cat":
			_, _ = io.Copy(files[1], files[0])
		case "echo":
			fmt.Fprintln(files[1], strings.Join(e.Args[1:], " "))
		case "exit":
			p.exit.Code, _ = strconv.Atoi(e.Args[1])
		case "wait":
			select {
			case <-p.killed:
				p.exit.Signal = int(unix.SIGKILL)
			case <-j.ended:
				p.exit = starter.ProcessExit{Signal: int(unix.SIGKILL), JobEnding: true}
			}
		default:
			fmt.Fprintf(files[2], "%s: not found\n", e.Args[0])
			p.exit.Code = 127
		}
	}()
	return p, nil
}

// fakeProcess is a process started in a fakeJob.
type fakeProcess struct {
	killOnce sync.Once
	killed   chan struct{}
	done     chan struct{}
	exit     starter.ProcessExit
}

func (p *fakeProcess) Console() *os.File           { return nil }
func (p *fakeProcess) Resize(uint16, uint16) error { return nil }

func (p *fakeProcess) Kill() error {
	p.killOnce.Do(func() { close(p.killed) })
	return nil
}

func (p *fakeProcess) Wait() (starter.ProcessExit, error) {
	<-p.done
	return p.exit, nil
}
