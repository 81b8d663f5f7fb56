package shadow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/wire"
)

// The file transfer benchmarks run a real shadow and play its starter
// over the claim's TLS link on loopback, with the starter's code
// (transfer.Sender and Receiver), on one 1 GiB file and on 10,000 small
// files in a tree; remote I/O reading the same 1 GiB file is measured
// beside them:
//
//	go test ./shadow -run '^$' -bench 'Transfer|RemoteIORead' -benchtime 3x -benchmem

var transferCases = []struct {
	name  string
	files int
	size  int
}{{"one-1GiB", 1, 1 << 30}, {"10000-small", 10000, 4 << 10}}

// writeTree writes files files of size bytes in 100 directories under
// dir/in.
func writeTree(b *testing.B, dir string, files, size int) {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range files {
		p := filepath.Join(dir, "in", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransferInput streams a job's inputs from the shadow into a
// scratch directory, as the starter does before the job starts.
func BenchmarkTransferInput(b *testing.B) {
	for _, bc := range transferCases {
		b.Run(bc.name, func(b *testing.B) {
			a := newAgent(b)
			writeTree(b, a.iwd, bc.files, bc.size)
			ready := a.submit(a.ad(0, `ShouldTransferFiles = "YES"`, `TransferInput = "in"`))
			client := wire.NewShadowClient(a.dial(ready))
			b.SetBytes(int64(bc.files) * int64(bc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				scratch := b.TempDir()
				b.StartTimer()
				if n := receiveInputs(b, client, scratch); n != bc.files {
					b.Fatalf("received %d files, want %d", n, bc.files)
				}
				b.StopTimer()
				os.RemoveAll(scratch)
				b.StartTimer()
			}
			b.ReportMetric(float64(bc.files*b.N)/b.Elapsed().Seconds(), "files/s")
			drain(a)
		})
	}
}

// BenchmarkTransferOutput streams a job's outputs from its scratch
// directory to the shadow, which writes them into the job's directory,
// as the starter does when the job ends.
func BenchmarkTransferOutput(b *testing.B) {
	for _, bc := range transferCases {
		b.Run(bc.name, func(b *testing.B) {
			a := newAgent(b)
			scratch := b.TempDir()
			writeTree(b, scratch, bc.files, bc.size)
			root, err := os.OpenRoot(scratch)
			if err != nil {
				b.Fatal(err)
			}
			defer root.Close()
			ready := a.submit(a.ad(0, `ShouldTransferFiles = "YES"`, `TransferOutput = "in"`))
			client := wire.NewShadowClient(a.dial(ready))
			b.SetBytes(int64(bc.files) * int64(bc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				os.RemoveAll(filepath.Join(a.iwd, "in"))
				b.StartTimer()
				bufs := wire.NewBuffers()
				stream, err := client.TransferOutput(b.Context(), bufs.CallOption())
				if err != nil {
					b.Fatal(err)
				}
				s := &transfer.Sender{Out: stream.Send, Buffers: bufs}
				s.SendFirst(&wire.TransferChunk{Secret: secret})
				if err := s.Send(root, "in", "in"); err != nil {
					b.Fatal(err)
				}
				reply, err := stream.CloseAndRecv()
				if err != nil {
					b.Fatal(err)
				}
				if reply.Files != int32(bc.files) {
					b.Fatalf("sent %d files, want %d", reply.Files, bc.files)
				}
			}
			b.ReportMetric(float64(bc.files*b.N)/b.Elapsed().Seconds(), "files/s")
			drain(a)
		})
	}
}

// BenchmarkRemoteIORead reads the 1 GiB file through the shadow's remote
// I/O calls, as iofs does for a job that opens it (1 MiB reads, one at a
// time, into one buffer), without writing it anywhere.
func BenchmarkRemoteIORead(b *testing.B) {
	const size = 1 << 30
	a := newAgent(b)
	writeTree(b, a.iwd, 1, size)
	ready := a.submit(a.ad(0))
	conn := a.dial(ready)
	stream, err := attach(b, conn, "1.0", secret)
	if err != nil {
		b.Fatal(err)
	}
	if err := stream.Send(started()); err != nil {
		b.Fatal(err)
	}
	a.expect(shadow.EventExecuting)
	io := wire.NewShadowIOClient(conn)
	buf := make([]byte, 0, 1<<20)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		o, err := io.Open(b.Context(), &wire.OpenRequest{Secret: secret, Path: filepath.Join(a.iwd, "in", "d00", "f00000"), Flags: unix.O_RDONLY})
		if err != nil || o.Errno != 0 {
			b.Fatalf("open: errno %d, %v", o.GetErrno(), err)
		}
		var n int64
		for {
			r := &wire.ReadReply{Data: buf}
			if err := conn.Invoke(b.Context(), wire.ShadowIO_Read_FullMethodName,
				&wire.ReadRequest{Secret: secret, Handle: o.Handle, Offset: n, Size: uint32(cap(buf))}, r); err != nil || r.Errno != 0 {
				b.Fatalf("read: errno %d, %v", r.Errno, err)
			}
			if len(r.Data) == 0 {
				break
			}
			n += int64(len(r.Data))
		}
		if n != size {
			b.Fatalf("read %d bytes, want %d", n, size)
		}
		if _, err := io.Close(b.Context(), &wire.HandleRequest{Secret: secret, Handle: o.Handle}); err != nil {
			b.Fatal(err)
		}
	}
}

func drain(a *agent) {
	for len(a.events) > 0 {
		<-a.events
	}
}

// receiveInputs is the starter's side of TransferInput.
func receiveInputs(b *testing.B, client wire.ShadowClient, scratch string) int {
	root, err := os.OpenRoot(scratch)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	stream, err := client.TransferInput(b.Context(), &wire.TransferInputRequest{Secret: secret})
	if err != nil {
		b.Fatal(err)
	}
	r := &transfer.Receiver{To: root}
	if err := r.Receive(func(c *wire.TransferChunk) error { return stream.RecvMsg(c) }); err != nil {
		b.Fatal(err)
	}
	return r.Files
}
