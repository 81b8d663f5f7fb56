package agent

import (
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// TestRunIOAddsUp checks that a run's remote I/O adds to the totals of the
// runs before it, while RemoteIOFiles and the event's run figures are the
// run's own.
func TestRunIOAddsUp(t *testing.T) {
	ad := classad.New()
	ad.SetInt("FileReadBytes", 1000)
	ad.SetInt("BytesRecvd", 1000)
	ad.SetInt("FileSeekCount", 2)
	rio := newRunIO([]shadow.FileStats{
		{Path: "/home/u/in.dat", Opens: 1, Reads: 2, BytesRead: 300, Seeks: 1, Time: time.Millisecond},
		{Path: "/home/u/out\ndat", Opens: 1, Writes: 3, BytesWritten: 70},
	})
	for name, v := range rio.change(ad) {
		ad.SetValue(name, v)
	}
	for name, want := range map[string]int64{
		"FileReadBytes": 1300, "BytesRecvd": 1300, "FileReadCount": 2, "FileSeekCount": 3,
		"FileWriteBytes": 70, "BytesSent": 70, "FileWriteCount": 3,
	} {
		if got, _ := ad.EvalInt(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	files, _ := ad.Eval("RemoteIOFiles").ListValue()
	if len(files) != 2 {
		t.Fatalf("RemoteIOFiles in %s", ad)
	}
	in, _ := files[0].ClassAdValue()
	out, _ := files[1].ClassAdValue()
	if r, _ := in.EvalInt("ReadBytes"); r != 300 {
		t.Errorf("in.dat: ReadBytes = %d", r)
	}
	if w, _ := out.EvalInt("WriteBytes"); w != 70 {
		t.Errorf("out: WriteBytes = %d", w)
	}
	var e joblog.Event
	rio.logTo(&e, ad)
	if e.BytesReceived != 300 || e.BytesSent != 70 || e.TotalBytesReceived != 1300 || e.TotalBytesSent != 70 {
		t.Errorf("event bytes %+v", e)
	}
	if want := "/home/u/in.dat: 1 opens, 2 reads, 300 bytes read, 0 writes, 0 bytes written, 1 seeks, 0.001 s\n" +
		"/home/u/out?dat: 1 opens, 0 reads, 0 bytes read, 3 writes, 70 bytes written, 0 seeks, 0.000 s\n"; e.Files != want {
		t.Errorf("event files:\n%s\nwant\n%s", e.Files, want)
	}
	if strings.Count(e.Format(), "\n") < 2 {
		t.Error("no event text")
	}
}
