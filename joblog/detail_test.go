package joblog

import (
	"strings"
	"testing"
	"time"
)

func TestFormatExactText(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{Event{Type: Submit, Cluster: 1, Time: when, Host: "10.0.0.1:9618"},
			"000 (001.000.000) 2026-11-22 10:00:03 Job submitted from host: <10.0.0.1:9618>\n...\n"},
		{Event{Type: Terminated, Cluster: 7, Proc: 2, Time: when, Signal: 9},
			"005 (007.002.000) 2026-11-22 10:00:03 Job terminated.\n" +
				"\t(0) Abnormal termination (signal 9)\n\t(0) No core file\n" +
				"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage\n" +
				"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage\n" +
				"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage\n" +
				"\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage\n" +
				"\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n" +
				"\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job\n...\n"},
		{Event{Type: ExecutableError, Cluster: 3, Time: when},
			"002 (003.000.000) 2026-11-22 10:00:03 (0) Job file not executable.\n...\n"},
		{Event{Type: Held, Cluster: 3, Time: when, Reason: "disk full", Code: 13, Subcode: 28},
			"012 (003.000.000) 2026-11-22 10:00:03 Job was held.\n\tdisk full\n\tCode 13 Subcode 28\n...\n"},
		{Event{Type: ImageSize, Cluster: 3, Time: when, ImageSizeKB: 2048, MemoryUsageMB: 2, ResidentSetSizeKB: 1500},
			"006 (003.000.000) 2026-11-22 10:00:03 Image size of job updated: 2048\n" +
				"\t2  -  MemoryUsage of job (MB)\n\t1500  -  ResidentSetSize of job (KB)\n...\n"},
		{Event{Type: JobAdInformation, Cluster: 3, Time: when, Ad: "JobStatus = 2\n\n  Owner = \"ann\"\n...\n"},
			"028 (003.000.000) 2026-11-22 10:00:03 Job ad information event triggered.\nJobStatus = 2\nOwner = \"ann\"\n...\n"},
		{Event{Type: Unsuspended, Cluster: 12345, Proc: 1000, Time: when},
			"011 (12345.1000.000) 2026-11-22 10:00:03 Job was unsuspended.\n...\n"},
	}
	for _, tt := range tests {
		if got := tt.e.Format(); got != tt.want {
			t.Errorf("Format(%v):\n got %q\nwant %q", tt.e.Type, got, tt.want)
		}
	}
}

// TestReadDetails checks the fields that only the detail lines carry.
func TestReadDetails(t *testing.T) {
	events := []Event{
		{Type: Terminated, Cluster: 5, Time: when, Normal: true, ReturnValue: 3, UserCPU: 90061, SysCPU: 2, BytesSent: 10, BytesReceived: 20},
		{Type: Evicted, Cluster: 5, Time: when, UserCPU: 61, BytesSent: 1, BytesReceived: 2, Reason: "owner returned"},
		{Type: Terminated, Cluster: 6, Time: when, Normal: true, BytesSent: 7, BytesReceived: 9, TotalBytesSent: 70, TotalBytesReceived: 90,
			Files: "/home/u/in.dat: 1 opens, 9 bytes read\n/home/u/x  -  y: 1 opens, 7 bytes written\n"},
		{Type: Evicted, Cluster: 6, Time: when, BytesReceived: 9, Files: "/home/u/in.dat: 1 opens, 9 bytes read\n", Reason: "owner returned"},
		{Type: Checkpointed, Cluster: 5, Time: when, UserCPU: 5, SysCPU: 1},
		{Type: ImageSize, Cluster: 5, Time: when, ImageSizeKB: 4096, MemoryUsageMB: 4, ResidentSetSizeKB: 3000},
		{Type: ExecutableError, Cluster: 5, Time: when, ErrorKind: BadLink, Reason: "exec format error"},
		{Type: JobAdInformation, Cluster: 5, Time: when, Ad: "JobStatus = 2\nOwner = \"ann\"\n"},
		{Type: Suspended, Cluster: 5, Time: when},
	}
	var log strings.Builder
	for _, e := range events {
		log.WriteString(e.Format())
	}
	got, err := Read(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(events) {
		t.Fatalf("read %d events, want %d", len(got), len(events))
	}
	for i, want := range events {
		if got[i] != want {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
}

func TestReadOldDateFormat(t *testing.T) {
	got, err := Read(strings.NewReader("001 (042.000.000) 11/22 10:00:02 Job executing on host: <10.0.0.2:9618>\n...\n"))
	if err != nil || len(got) != 1 {
		t.Fatalf("Read = %v, %v", got, err)
	}
	e := got[0]
	want := time.Date(time.Now().Year(), 11, 22, 10, 0, 2, 0, time.Local)
	if e.Type != Execute || e.Cluster != 42 || e.Host != "10.0.0.2:9618" || !e.Time.Equal(want) {
		t.Errorf("read %+v", e)
	}
}

func BenchmarkFormat(b *testing.B) {
	e := Event{Type: Terminated, Cluster: 1, Time: when, Normal: true, UserCPU: 12, BytesSent: 100}
	b.ReportAllocs()
	for b.Loop() {
		_ = e.Format()
	}
}

func BenchmarkRead(b *testing.B) {
	var log strings.Builder
	for i := range 100 {
		log.WriteString(Event{Type: Terminated, Cluster: i, Time: when, Normal: true}.Format())
	}
	text := log.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(strings.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}
