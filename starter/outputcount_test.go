package starter

import (
	"io"
	"os"
	"testing"
)

// TestOutputCountAddsUp: at any moment what was read from a job's pipe
// and what waits in it add up to what the job wrote.
func TestOutputCountAddsUp(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var o outputCount
	from := o.reader(1, r)
	want := func(n int64) {
		t.Helper()
		out, errs := o.at()
		if out == nil || *out != n || errs != nil {
			t.Fatalf("at: %v %v, want %d and no stderr", out, errs, n)
		}
	}
	want(0)
	if _, err := w.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	want(10)
	buf := make([]byte, 4)
	if n, err := from.Read(buf); n != 4 || err != nil {
		t.Fatalf("read %d %v", n, err)
	}
	want(10)
	w.Close()
	rest, err := io.ReadAll(from)
	if string(buf)+string(rest) != "0123456789" || err != nil {
		t.Fatalf("read %q %q %v", buf, rest, err)
	}
	want(10)
}
