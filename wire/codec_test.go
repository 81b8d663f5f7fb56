package wire

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// split cuts b into pieces of n bytes, as frames arrive.
func split(b []byte, n int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		s = append(s, mem.SliceBuffer(b[:k]))
		b = b[k:]
	}
	return s
}

// TestCodecIsProtobuf checks that the shortcuts encode and decode what the
// standard protobuf encoding does.
func TestCodecIsProtobuf(t *testing.T) {
	c := newCodec()
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	for _, m := range []proto.Message{
		&ReadReply{Data: data},
		&ReadReply{Errno: 2},
		&ReadReply{},
		&WriteRequest{Secret: "s3cret", Handle: 7, Offset: 1 << 40, Data: data},
		&WriteRequest{Secret: "s3cret", Handle: 7, Offset: -1},
		&WriteRequest{Secret: "s3cret", Handle: 7, Data: data[:300], Extents: []int64{1 << 40, 100, 0, 200}, Sync: Sync_SYNC_ALL},
		&WriteRequest{Handle: 7, Sync: Sync_SYNC_DATA},
		&WriteRequest{Handle: 7, Data: data[:10], Sync: Sync_SYNC_ALL, SetMtime: true, MtimeNs: 1_700_000_000_123_456_789},
		&WriteRequest{Handle: 7, SetMtime: true, MtimeNs: -5},
		&CheckpointChunk{Secret: "s3cret", Info: &CheckpointInfo{FrozenSeconds: 0.25, ImageBytes: 1 << 30, Vacate: true}, Data: data},
		&CheckpointChunk{Data: data},
		&CheckpointChunk{},
		&TransferChunk{Secret: "s3cret", Intermediate: true, Entry: &TransferEntry{Name: "a/b", Size: int64(len(data)), Mode: 0o644}, Data: data, Sha256: []byte("sum")},
		&TransferChunk{Data: data, Sha256: []byte("sum")},
		&TransferChunk{Entry: &TransferEntry{Name: "d", Kind: TransferEntry_DIR}},
		&TransferChunk{},
	} {
		enc, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		std, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := enc.Materialize(); !bytes.Equal(got, std) {
			t.Errorf("%T: encoded %d bytes unlike protobuf's %d", m, len(got), len(std))
		}
		for _, buf := range [][]byte{make([]byte, 0, len(data)), make([]byte, 0, 10)} {
			got := m.ProtoReflect().New().Interface()
			switch r := got.(type) {
			case *ReadReply:
				r.Data = buf
			case *CheckpointChunk:
				r.Data = buf
			case *TransferChunk:
				r.Data = buf
			}
			if err := c.Unmarshal(split(std, 16384), got); err != nil {
				t.Fatalf("%T: %v", m, err)
			}
			if !proto.Equal(got, m) {
				t.Errorf("%T: decoded %v", m, got)
			}
		}
	}
	// The caller's buffer receives the data.
	buf := make([]byte, 0, len(data))
	r := &ReadReply{Data: buf}
	std, _ := proto.Marshal(&ReadReply{Data: data})
	if err := c.Unmarshal(split(std, 1000), r); err != nil || &r.Data[0] != &buf[:1][0] {
		t.Errorf("ReadReply not decoded into the caller's buffer (err %v)", err)
	}
	chunk := &CheckpointChunk{Data: buf}
	std, _ = proto.Marshal(&CheckpointChunk{Data: data})
	if err := c.Unmarshal(split(std, 1000), chunk); err != nil || &chunk.Data[0] != &buf[:1][0] || !bytes.Equal(chunk.Data, data) {
		t.Errorf("CheckpointChunk not decoded into the caller's buffer (err %v)", err)
	}
	if err := c.Unmarshal(split(std[:len(std)-1], 100), &CheckpointChunk{Data: make([]byte, 0, 10)}); err == nil {
		t.Error("a truncated CheckpointChunk decoded")
	}
	tc := &TransferChunk{Data: buf}
	std, _ = proto.Marshal(&TransferChunk{Entry: &TransferEntry{Name: "f"}, Data: data})
	if err := c.Unmarshal(split(std, 1000), tc); err != nil || &tc.Data[0] != &buf[:1][0] || !bytes.Equal(tc.Data, data) {
		t.Errorf("TransferChunk not decoded into the caller's buffer (err %v)", err)
	}
	if err := c.Unmarshal(split(std[:len(std)-1], 100), &TransferChunk{Data: make([]byte, 0, 10)}); err == nil {
		t.Error("a truncated TransferChunk decoded")
	}
	std, _ = proto.Marshal(&ReadReply{Data: data})
	// Unknown fields are skipped; truncated messages fail.
	withUnknown := append(append([]byte{}, std...), 0x78, 0x05, 0x82, 0x01, 0x02, 'h', 'i')
	if err := c.Unmarshal(split(withUnknown, 100), &ReadReply{Data: make([]byte, 0, 10)}); err != nil {
		t.Errorf("unknown fields: %v", err)
	}
	if err := c.Unmarshal(split(std[:len(std)-1], 100), &ReadReply{Data: make([]byte, 0, 10)}); err == nil {
		t.Error("a truncated ReadReply decoded")
	}
	if err := c.Unmarshal(split(std[:len(std)-1], 100), &WriteRequest{}); err == nil {
		t.Error("a truncated WriteRequest decoded")
	}
}

// TestBuffersReturn checks that a reply's lent buffer goes back once
// gRPC frees what the codec marshalled, and that the encoding is unchanged.
func TestBuffersReturn(t *testing.T) {
	b := NewBuffers()
	c := newCodec()
	c.buffers = b
	for _, n := range []int{1000, 0} {
		buf := b.Get(4096)
		copy(buf, bytes.Repeat([]byte{7}, n))
		m := &ReadReply{Data: buf[:n]}
		std, _ := proto.Marshal(m)
		enc, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc.Materialize(), std) {
			t.Errorf("%d bytes: encoding differs from protobuf's", n)
		}
		enc.Free()
		if len(b.lent) != 0 {
			t.Errorf("%d bytes: %d buffers still lent after the reply was freed", n, len(b.lent))
		}
	}
	// A checkpoint chunk from a lent buffer goes out from it, and the
	// buffer comes back; one from any other buffer is copied.
	buf := b.Get(4096)
	copy(buf, bytes.Repeat([]byte{5}, 4096))
	for _, m := range []*CheckpointChunk{{Data: buf[:3000]}, {Data: bytes.Repeat([]byte{6}, 3000)}} {
		std, _ := proto.Marshal(m)
		enc, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc.Materialize(), std) {
			t.Error("checkpoint chunk: encoding differs from protobuf's")
		}
		last := enc[len(enc)-1].ReadOnlyData()
		if shared := &last[0] == &buf[0]; shared != (&m.Data[0] == &buf[0]) {
			t.Errorf("checkpoint chunk sent from the lent buffer: %v, want %v", shared, !shared)
		}
		enc.Free()
	}
	if len(b.lent) != 0 {
		t.Errorf("%d buffers still lent after the chunk was freed", len(b.lent))
	}
	// So does a transfer chunk's data, the rest of the chunk around it.
	buf = b.Get(4096)
	copy(buf, bytes.Repeat([]byte{4}, 4096))
	for _, m := range []*TransferChunk{
		{Secret: "s3cret", Entry: &TransferEntry{Name: "f", Size: 3000}, Data: buf[:3000], Sha256: []byte("sum")},
		{Data: bytes.Repeat([]byte{6}, 3000)},
	} {
		std, _ := proto.Marshal(m)
		enc, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc.Materialize(), std) {
			t.Error("transfer chunk: encoding differs from protobuf's")
		}
		shared := false
		for _, piece := range enc {
			if d := piece.ReadOnlyData(); len(d) > 0 && &d[0] == &buf[0] {
				shared = true
			}
		}
		if shared != (&m.Data[0] == &buf[0]) {
			t.Errorf("transfer chunk sent from the lent buffer: %v, want %v", shared, !shared)
		}
		enc.Free()
	}
	if len(b.lent) != 0 {
		t.Errorf("%d buffers still lent after the transfer chunk was freed", len(b.lent))
	}
	w := &WriteRequest{Secret: "s3cret", Handle: 1, Data: bytes.Repeat([]byte{9}, 70000)}
	std, _ := proto.Marshal(w)
	got := &WriteRequest{}
	if err := c.Unmarshal(split(std, 16384), got); err != nil || !proto.Equal(got, w) {
		t.Fatalf("WriteRequest decoded as %d bytes, err %v", len(got.Data), err)
	}
	if len(b.lent) != 1 {
		t.Errorf("the write's data is not in a lent buffer (%d lent)", len(b.lent))
	}
	b.Put(got.Data)
	// A buffer no reply carried is given back with Put; one that is not
	// lent is ignored.
	buf = b.Get(10)
	b.Put(buf)
	b.Put(make([]byte, 10))
	if len(b.lent) != 0 {
		t.Errorf("%d buffers still lent after Put", len(b.lent))
	}
}

// FuzzWriteRequest checks that the codec's own decoding of a WriteRequest
// accepts what protobuf accepts, and decodes it alike.
func FuzzWriteRequest(f *testing.F) {
	for _, m := range []*WriteRequest{
		{Secret: "s", Handle: 1, Offset: 5, Data: []byte("abc")},
		{Data: []byte("abcdef"), Extents: []int64{0, 3, 10, 3}, Sync: Sync_SYNC_ALL},
		{Handle: 2, SetMtime: true, MtimeNs: 1_700_000_000_123_456_789, Sync: Sync_SYNC_ALL},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	c := newCodec()
	f.Fuzz(func(t *testing.T, b []byte) {
		var std WriteRequest
		stdErr := proto.Unmarshal(b, &std)
		var got WriteRequest
		err := c.Unmarshal(split(b, 7), &got)
		if stdErr != nil {
			return // the codec may be more lenient, never less
		}
		if err != nil {
			t.Fatalf("protobuf decodes %x, the codec fails: %v", b, err)
		}
		std.ProtoReflect().SetUnknown(nil)
		if !proto.Equal(&got, &std) {
			t.Fatalf("decoded %v, protobuf %v", &got, &std)
		}
	})
}
