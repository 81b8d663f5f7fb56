package agent

import (
	"fmt"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// runIO is what one run's remote I/O did, as the shadow's I/O server
// counted it per submit-side file.
type runIO struct {
	files                                       []shadow.FileStats
	reads, readBytes, writes, writeBytes, seeks int64
}

func newRunIO(files []shadow.FileStats) runIO {
	r := runIO{files: files}
	for _, f := range files {
		r.reads += f.Reads
		r.readBytes += f.BytesRead
		r.writes += f.Writes
		r.writeBytes += f.BytesWritten
		r.seeks += f.Seeks
	}
	return r
}

// change returns the job ad's remote I/O attributes after the run. The
// totals are over all the job's runs, under the names HTCondor's standard
// universe gave them (FileReadCount, FileReadBytes, FileWriteCount,
// FileWriteBytes, FileSeekCount), and as BytesRecvd and BytesSent, the
// bytes received and sent by the job. RemoteIOFiles lists the run's
// figures per file, one ad each:
//
//	[ Name = "/home/u/in.dat"; OpenCount = 1; ReadCount = 1; ReadBytes = 50000;
//	  WriteCount = 0; WriteBytes = 0; SeekCount = 0; Seconds = 0.0004 ]
func (r runIO) change(ad *classad.ClassAd) change {
	add := func(name string, n int64) classad.Value {
		old, _ := ad.EvalInt(name)
		return classad.Int(old + n)
	}
	files := make([]classad.Value, len(r.files))
	for i, f := range r.files {
		fa := classad.New()
		fa.SetString("Name", f.Path)
		fa.SetInt("OpenCount", f.Opens)
		fa.SetInt("ReadCount", f.Reads)
		fa.SetInt("ReadBytes", f.BytesRead)
		fa.SetInt("WriteCount", f.Writes)
		fa.SetInt("WriteBytes", f.BytesWritten)
		fa.SetInt("SeekCount", f.Seeks)
		fa.SetReal("Seconds", f.Time.Seconds())
		files[i] = classad.AdValue(fa)
	}
	return change{
		AttrFileReadCount:  add(AttrFileReadCount, r.reads),
		AttrFileReadBytes:  add(AttrFileReadBytes, r.readBytes),
		AttrFileWriteCount: add(AttrFileWriteCount, r.writes),
		AttrFileWriteBytes: add(AttrFileWriteBytes, r.writeBytes),
		AttrFileSeekCount:  add(AttrFileSeekCount, r.seeks),
		AttrBytesRecvd:     add(AttrBytesRecvd, r.readBytes),
		AttrBytesSent:      add(AttrBytesSent, r.writeBytes),
		AttrRemoteIOFiles:  classad.List(files...),
	}
}

// logTo adds the run's figures to its terminated or evicted event; the
// totals are taken from the job ad once change has been applied.
func (r runIO) logTo(e *joblog.Event, ad *classad.ClassAd) {
	e.BytesSent, e.BytesReceived = r.writeBytes, r.readBytes
	e.TotalBytesSent, _ = ad.EvalInt(AttrBytesSent)
	e.TotalBytesReceived, _ = ad.EvalInt(AttrBytesRecvd)
	var b strings.Builder
	for _, f := range r.files {
		// A file name is one line of the log.
		name := strings.NewReplacer("\n", "?", "\r", "?").Replace(f.Path)
		fmt.Fprintf(&b, "%s: %d opens, %d reads, %d bytes read, %d writes, %d bytes written, %d seeks, %.3f s\n",
			name, f.Opens, f.Reads, f.BytesRead, f.Writes, f.BytesWritten, f.Seeks, f.Time.Seconds())
	}
	e.Files = b.String()
}
