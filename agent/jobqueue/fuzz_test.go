package jobqueue

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"harrier.dev/harrier/classad"
)

// FuzzDecode feeds arbitrary bytes to the frame reader and the operation
// decoder, as recovery does with a damaged file: they must return errors,
// never panic or allocate without bound, and intact input must round-trip.
func FuzzDecode(f *testing.F) {
	var enc encoder
	frame, start := beginFrame(nil)
	enc.buf = frame
	for p := range 3 {
		enc.op(Op{kind: OpNewJob, id: JobID{4, p}, ad: jobAd(4, p)})
	}
	enc.op(Op{kind: OpSet, id: JobID{4, 1}, name: "JobStatus", expr: expr("5")})
	enc.op(Op{kind: OpDelete, id: JobID{4, 1}, name: "Rank"})
	enc.op(Op{kind: OpDestroy, id: JobID{4, 2}})
	enc.op(Op{kind: opNewCluster, id: JobID{Cluster: 9}})
	enc.op(Op{kind: opNextCluster, id: JobID{Cluster: 10}})
	enc.op(Op{kind: opReserve, id: JobID{11, 3}, name: "alice"})
	enc.op(Op{kind: OpUseCluster, id: JobID{Cluster: 11}, name: "alice"})
	enc.op(Op{kind: opHistorySeq, id: JobID{Cluster: 40}})
	enc.op(Op{kind: OpRetire, id: JobID{4, 0}, ad: jobAd(4, 0)})
	enc.op(Op{kind: OpRetire, id: JobID{4, 1}, ad: jobAd(4, 1)})
	must(finishFrame(enc.buf, start))
	f.Add(enc.buf)
	f.Add(enc.buf[:len(enc.buf)/2])
	f.Add([]byte("HJQ\x01\x00\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("HJQ\x01\xff\xff\xff\xff1234"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bytes.NewReader(data), limit: int64(len(data))}
		for {
			payload, _, err := fr.next()
			if err == io.EOF || errors.Is(err, errBadFrame) {
				validFrameAfter(data)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			checkPayload(t, payload)
		}
	})
}

// FuzzDecodeOps feeds arbitrary payloads to the operation decoder directly,
// past the checksum that keeps FuzzDecode's inputs mostly out.
func FuzzDecodeOps(f *testing.F) {
	var enc encoder
	enc.op(Op{kind: OpNewJob, id: JobID{4, 0}, ad: jobAd(4, 0)})
	enc.op(Op{kind: OpNewJob, id: JobID{4, 1}, ad: jobAd(4, 1)})
	enc.op(Op{kind: OpSet, id: JobID{4, 1}, name: "JobStatus", expr: expr("5")})
	enc.op(Op{kind: OpDestroy, id: JobID{4, 0}})
	enc.op(Op{kind: opHistorySeq, id: JobID{Cluster: 7}})
	enc.op(Op{kind: OpRetire, id: JobID{4, 1}, ad: jobAd(4, 1)})
	enc.op(Op{kind: opReserve, id: JobID{Cluster: 5}, name: "bob"})
	enc.op(Op{kind: OpUseCluster, id: JobID{Cluster: 5}, name: "bob"})
	enc.op(Op{kind: opHistoryAd, ad: jobAd(5, 0)})
	enc.op(Op{kind: opHistoryAd, ad: jobAd(5, 1)})
	f.Add(enc.buf)
	f.Add([]byte{byte(opNewJobLike), 2, 0, 0, 0})
	f.Add([]byte{byte(OpSet), 2, 0, 1, 'A', 3, '1', '+', '('})
	f.Fuzz(checkPayload)
}

// checkPayload decodes and applies payload, which must not panic, and
// checks that what decoded encodes and decodes to the same operations.
func checkPayload(t *testing.T, payload []byte) {
	ops := decodeAll(payload)
	q := newQueue()
	for _, op := range ops {
		q.apply(op, map[*classad.ClassAd]bool{}) // errors are fine, panics not
	}
	// Whatever decoded must encode and decode to the same thing.
	var enc encoder
	for _, op := range ops {
		if err := enc.op(op); err != nil {
			t.Fatalf("re-encode %s: %v", op.kind, err)
		}
	}
	again := decodeAll(enc.buf)
	if len(again) != len(ops) {
		t.Fatalf("re-decoded %d ops, want %d", len(again), len(ops))
	}
	for i := range ops {
		if a, b := describe(ops[i]), describe(again[i]); a != b {
			t.Fatalf("op %d: re-decoded %s, want %s", i, b, a)
		}
	}
}

// decodeAll decodes operations up to the first error.
func decodeAll(payload []byte) []Op {
	var ops []Op
	d := newDecoder(payload)
	for d.more() {
		op, err := d.op()
		if err != nil {
			break
		}
		ops = append(ops, op)
	}
	return ops
}

func describe(op Op) string {
	s := fmt.Sprintf("%s %s %q", op.kind, op.id, op.name)
	if !op.expr.IsZero() {
		s += " " + op.expr.String()
	}
	if op.ad != nil {
		s += " " + op.ad.String()
	}
	return s
}
