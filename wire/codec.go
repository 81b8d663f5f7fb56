package wire

import (
	"fmt"
	"io"
	"unsafe"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// codec is gRPC's protobuf codec with shortcuts for the bulk of remote
// I/O and of checkpoint images, which is otherwise copied twice on each
// side:
//
//   - a ReadReply's and a WriteRequest's data are sent from the message's
//     own slice, and a CheckpointChunk's or a TransferChunk's from a lent
//     buffer (see Buffers), not copied into a marshalling buffer first;
//   - a ReadReply, a CheckpointChunk or a TransferChunk whose Data has
//     capacity when the call is made is decoded straight into that
//     buffer, and a
//     WriteRequest's data is copied once, without assembling the message
//     in one piece first.
//
// The encoding is the standard one; every other message, and a ReadReply,
// CheckpointChunk or TransferChunk without a buffer, goes through gRPC's
// own codec.
type codec struct {
	proto encoding.CodecV2
	// buffers, if set, lent the buffers of the ReadReplies this server
	// sends, each of which goes back once gRPC is done with it, and
	// lends those the data of WriteRequests is decoded into.
	buffers *Buffers
}

func newCodec() *codec {
	return &codec{proto: encoding.GetCodecV2(grpcproto.Name)}
}

// Name is the standard codec's: the content type on the wire is the same.
func (c *codec) Name() string { return grpcproto.Name }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *ReadReply:
		var head []byte
		if m.Errno != 0 {
			head = protowire.AppendTag(head, 1, protowire.VarintType)
			head = protowire.AppendVarint(head, uint64(m.Errno))
		}
		if c.buffers != nil {
			if p := c.buffers.take(m.Data); p != nil {
				*p = m.Data
				if len(m.Data) == 0 {
					returned{c.buffers}.Put(p)
					return withData(head, 2, nil), nil
				}
				return append(withData(head, 2, nil), bytesHead(2, len(m.Data)), mem.NewBuffer(p, returned{c.buffers})), nil
			}
		}
		return withData(head, 2, m.Data), nil
	case *CheckpointChunk:
		// A chunk of an image the shadow serves from a lent buffer goes
		// out from it, and the buffer comes back once sent; any other
		// is copied, as its sender may reuse its buffer.
		if c.buffers != nil && m.Secret == "" && m.Info == nil && len(m.Data) > 0 {
			if p := c.buffers.take(m.Data); p != nil {
				*p = m.Data
				return mem.BufferSlice{bytesHead(3, len(m.Data)), mem.NewBuffer(p, returned{c.buffers})}, nil
			}
		}
	case *TransferChunk:
		// A file's data read into a lent buffer goes out from it (see
		// transfer.Sender); the rest of the chunk is small.
		if c.buffers != nil && len(m.Data) > 0 {
			if p := c.buffers.take(m.Data); p != nil {
				*p = m.Data
				head, err := proto.Marshal(&TransferChunk{Secret: m.Secret, Intermediate: m.Intermediate, Entry: m.Entry})
				if err != nil {
					returned{c.buffers}.Put(p)
					return nil, err
				}
				out := mem.BufferSlice{mem.SliceBuffer(head), bytesHead(4, len(m.Data)), mem.NewBuffer(p, returned{c.buffers})}
				if len(m.Sha256) > 0 {
					tail := protowire.AppendTag(nil, 5, protowire.BytesType)
					out = append(out, mem.SliceBuffer(protowire.AppendBytes(tail, m.Sha256)))
				}
				return out, nil
			}
		}
	case *WriteRequest:
		var head []byte
		if m.Secret != "" {
			head = protowire.AppendTag(head, 1, protowire.BytesType)
			head = protowire.AppendString(head, m.Secret)
		}
		if m.Handle != 0 {
			head = protowire.AppendTag(head, 2, protowire.VarintType)
			head = protowire.AppendVarint(head, m.Handle)
		}
		if m.Offset != 0 {
			head = protowire.AppendTag(head, 3, protowire.VarintType)
			head = protowire.AppendVarint(head, uint64(m.Offset))
		}
		out := withData(head, 4, m.Data)
		if tail := writeRequestTail(m); len(tail) > 0 {
			out = append(out, mem.SliceBuffer(tail))
		}
		return out, nil
	}
	return c.proto.Marshal(v)
}

// writeRequestTail encodes the fields of m after its data: the extents
// (packed), the sync and the modification time.
func writeRequestTail(m *WriteRequest) []byte {
	var tail []byte
	if len(m.Extents) > 0 {
		n := 0
		for _, e := range m.Extents {
			n += protowire.SizeVarint(uint64(e))
		}
		tail = protowire.AppendTag(make([]byte, 0, n+16), 5, protowire.BytesType)
		tail = protowire.AppendVarint(tail, uint64(n))
		for _, e := range m.Extents {
			tail = protowire.AppendVarint(tail, uint64(e))
		}
	}
	if m.Sync != 0 {
		tail = protowire.AppendTag(tail, 6, protowire.VarintType)
		tail = protowire.AppendVarint(tail, uint64(m.Sync))
	}
	if m.SetMtime {
		tail = protowire.AppendTag(tail, 7, protowire.VarintType)
		tail = protowire.AppendVarint(tail, 1)
	}
	if m.MtimeNs != 0 {
		tail = protowire.AppendTag(tail, 8, protowire.VarintType)
		tail = protowire.AppendVarint(tail, uint64(m.MtimeNs))
	}
	return tail
}

// withData appends the bytes field num holding data to the encoded fields
// in head, sharing data rather than copying it.
func withData(head []byte, num protowire.Number, data []byte) mem.BufferSlice {
	if len(data) == 0 {
		return mem.BufferSlice{mem.SliceBuffer(head)}
	}
	return mem.BufferSlice{mem.SliceBuffer(head), bytesHead(num, len(data)), mem.SliceBuffer(data)}
}

// bytesHead is the tag and length of bytes field num holding n bytes.
func bytesHead(num protowire.Number, n int) mem.SliceBuffer {
	b := protowire.AppendTag(make([]byte, 0, 8), num, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *ReadReply:
		if cap(m.Data) > 0 {
			return decodeReadReply(data.Reader(), m)
		}
	case *WriteRequest:
		return decodeWriteRequest(data.Reader(), m, c.buffers)
	case *CheckpointChunk:
		if cap(m.Data) > 0 {
			return decodeCheckpointChunk(data.Reader(), m)
		}
	case *TransferChunk:
		if cap(m.Data) > 0 {
			return decodeTransferChunk(data.Reader(), m)
		}
	}
	return c.proto.Unmarshal(data, v)
}

// decodeTransferChunk decodes a TransferChunk from r, reading its data
// into m.Data's buffer if it fits: a transfer's receiver reuses one
// buffer for every chunk.
func decodeTransferChunk(r *mem.Reader, m *TransferChunk) error {
	defer r.Close()
	buf := m.Data[:0]
	m.Reset()
	for r.Remaining() > 0 {
		tag, err := readVarint(r)
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case num == 1 && typ == protowire.BytesType:
			b, err := readBytes(r, nil)
			if err != nil {
				return fmt.Errorf("decode TransferChunk: %w", err)
			}
			m.Secret = string(b)
		case num == 2 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.Intermediate = v != 0
		case num == 3 && typ == protowire.BytesType:
			b, err := readBytes(r, nil)
			if err != nil {
				return fmt.Errorf("decode TransferChunk: %w", err)
			}
			if m.Entry == nil {
				m.Entry = &TransferEntry{}
			}
			// Merged, as protobuf merges a repeated message field.
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, m.Entry); err != nil {
				return fmt.Errorf("decode TransferChunk: %w", err)
			}
		case num == 4 && typ == protowire.BytesType:
			if m.Data, err = readBytes(r, buf); err != nil {
				return fmt.Errorf("decode TransferChunk: %w", err)
			}
		case num == 5 && typ == protowire.BytesType:
			if m.Sha256, err = readBytes(r, nil); err != nil {
				return fmt.Errorf("decode TransferChunk: %w", err)
			}
		default:
			if err := skipField(r, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeCheckpointChunk decodes a CheckpointChunk from r, reading its
// data into m.Data's buffer if it fits: a checkpoint image's receiver
// reuses one buffer for every chunk rather than having each assembled
// and copied into a new one.
func decodeCheckpointChunk(r *mem.Reader, m *CheckpointChunk) error {
	defer r.Close()
	buf := m.Data[:0]
	m.Reset()
	for r.Remaining() > 0 {
		tag, err := readVarint(r)
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case num == 1 && typ == protowire.BytesType:
			b, err := readBytes(r, nil)
			if err != nil {
				return fmt.Errorf("decode CheckpointChunk: %w", err)
			}
			m.Secret = string(b)
		case num == 2 && typ == protowire.BytesType:
			b, err := readBytes(r, nil)
			if err != nil {
				return fmt.Errorf("decode CheckpointChunk: %w", err)
			}
			if m.Info == nil {
				m.Info = &CheckpointInfo{}
			}
			// Merged, as protobuf merges a repeated message field.
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, m.Info); err != nil {
				return fmt.Errorf("decode CheckpointChunk: %w", err)
			}
		case num == 3 && typ == protowire.BytesType:
			if m.Data, err = readBytes(r, buf); err != nil {
				return fmt.Errorf("decode CheckpointChunk: %w", err)
			}
		default:
			if err := skipField(r, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeWriteRequest decodes a WriteRequest from r, copying its data once
// (into a buffer from bufs, if not nil) rather than assembling the message
// first.
func decodeWriteRequest(r *mem.Reader, m *WriteRequest, bufs *Buffers) error {
	defer r.Close()
	m.Reset()
	for r.Remaining() > 0 {
		tag, err := readVarint(r)
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case num == 2 && typ == protowire.VarintType:
			if m.Handle, err = readVarint(r); err != nil {
				return err
			}
		case num == 3 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.Offset = int64(v)
		case num == 1 && typ == protowire.BytesType:
			b, err := readBytes(r, nil)
			if err != nil {
				return fmt.Errorf("decode WriteRequest: %w", err)
			}
			m.Secret = string(b)
		case num == 5 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.Extents = append(m.Extents, int64(v))
		case num == 5 && typ == protowire.BytesType:
			n, err := readVarint(r)
			if err != nil {
				return err
			}
			if n > uint64(r.Remaining()) {
				return fmt.Errorf("decode WriteRequest: extents of %d bytes, %d left: %w", n, r.Remaining(), io.ErrUnexpectedEOF)
			}
			for end := r.Remaining() - int(n); r.Remaining() > end; {
				v, err := readVarint(r)
				if err != nil {
					return err
				}
				m.Extents = append(m.Extents, int64(v))
			}
		case num == 6 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.Sync = Sync(v)
		case num == 7 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.SetMtime = v != 0
		case num == 8 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.MtimeNs = int64(v)
		case num == 4 && typ == protowire.BytesType:
			var buf []byte
			if bufs != nil && m.Data == nil {
				buf = bufs.Get(min(r.Remaining(), bufferSize))[:0]
			}
			m.Data, err = readBytes(r, buf)
			if bufs != nil && (err != nil || unsafe.SliceData(m.Data) != unsafe.SliceData(buf)) {
				bufs.Put(buf) // not used after all
			}
			if err != nil {
				return fmt.Errorf("decode WriteRequest: %w", err)
			}
		default:
			if err := skipField(r, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// readBytes reads a length-delimited field's contents, into buf if it
// fits.
func readBytes(r *mem.Reader, buf []byte) ([]byte, error) {
	n, err := readVarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(r.Remaining()) {
		return nil, fmt.Errorf("field of %d bytes, %d left: %w", n, r.Remaining(), io.ErrUnexpectedEOF)
	}
	if n > uint64(cap(buf)) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// decodeReadReply decodes a ReadReply from r, reading its data into
// m.Data's buffer if it fits.
func decodeReadReply(r *mem.Reader, m *ReadReply) error {
	defer r.Close()
	buf := m.Data[:0]
	m.Reset()
	for r.Remaining() > 0 {
		tag, err := readVarint(r)
		if err != nil {
			return err
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, err := readVarint(r)
			if err != nil {
				return err
			}
			m.Errno = uint32(v)
		case num == 2 && typ == protowire.BytesType:
			if m.Data, err = readBytes(r, buf); err != nil {
				return fmt.Errorf("decode ReadReply: %w", err)
			}
		default:
			if err := skipField(r, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func readVarint(r io.ByteReader) (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("decode varint: %w", io.ErrUnexpectedEOF)
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("decode varint: overflow")
}

// skipField skips a field this version does not know.
func skipField(r *mem.Reader, typ protowire.Type) error {
	var n uint64
	switch typ {
	case protowire.VarintType:
		_, err := readVarint(r)
		return err
	case protowire.Fixed32Type:
		n = 4
	case protowire.Fixed64Type:
		n = 8
	case protowire.BytesType:
		var err error
		if n, err = readVarint(r); err != nil {
			return err
		}
	case protowire.StartGroupType:
		// A group (deprecated, still valid protobuf): skip its fields up
		// to its end.
		for {
			tag, err := readVarint(r)
			if err != nil {
				return err
			}
			_, typ := protowire.DecodeTag(tag)
			if typ == protowire.EndGroupType {
				return nil
			}
			if err := skipField(r, typ); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("decode: unsupported wire type %d", typ)
	}
	if n > uint64(r.Remaining()) {
		return fmt.Errorf("decode: field of %d bytes, %d left: %w", n, r.Remaining(), io.ErrUnexpectedEOF)
	}
	_, err := r.Discard(int(n))
	return err
}
