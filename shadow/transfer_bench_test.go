package shadow_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/wire"
)

// BenchmarkTransferInput streams a job's inputs from a real shadow over
// its TLS link on loopback into a scratch directory, as the starter does:
// one 1 GiB file, and 10,000 small files in a tree.
//
//	go test ./shadow -run '^$' -bench TransferInput -benchtime 3x -benchmem
func BenchmarkTransferInput(b *testing.B) {
	for _, bc := range []struct {
		name  string
		files int
		size  int
	}{{"one-1GiB", 1, 1 << 30}, {"10000-small", 10000, 4 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			a := newAgent(b)
			data := make([]byte, bc.size)
			for i := range data {
				data[i] = byte(i * 7)
			}
			for i := range bc.files {
				p := filepath.Join(a.iwd, "in", fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d", i))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			ready := a.submit(a.ad(0, `ShouldTransferFiles = "YES"`, `TransferInput = "in"`))
			client := wire.NewShadowClient(a.dial(ready))
			b.SetBytes(int64(bc.files) * int64(bc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				scratch := b.TempDir()
				b.StartTimer()
				n := receiveInputs(b, client, scratch)
				if n != bc.files {
					b.Fatalf("received %d files, want %d", n, bc.files)
				}
				b.StopTimer()
				os.RemoveAll(scratch)
				b.StartTimer()
			}
			b.ReportMetric(float64(bc.files*b.N)/b.Elapsed().Seconds(), "files/s")
			for len(a.events) > 0 {
				<-a.events
			}
		})
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
	var c wire.TransferChunk
	for {
		c.Reset()
		err := stream.RecvMsg(&c)
		if errors.Is(err, io.EOF) {
			if err := r.Close(); err != nil {
				b.Fatal(err)
			}
			return r.Files
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Chunk(&c); err != nil {
			b.Fatal(err)
		}
	}
}
