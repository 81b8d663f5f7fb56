package jobqueue

import (
	"encoding/binary"
	"errors"
	"fmt"

	"harrier.dev/harrier/classad"
)

// Operation codes used only on disk, next to the public OpKinds.
const (
	// opNewCluster reserved a cluster number without an owner; logs
	// written before reservations had owners may hold it.
	opNewCluster OpKind = 1
	// opNewJobLike adds a job whose ad is the previous ad of the same
	// frame with some attributes dropped and some set; opRetireLike
	// retires a job with such an ad.
	opNewJobLike OpKind = 16
	opRetireLike OpKind = 21
	// opNextCluster records the cluster counter: the next number to hand out.
	opNextCluster OpKind = 17
	// opSnapshotEnd ends a snapshot and carries its job count.
	opSnapshotEnd OpKind = 18
	// opHistoryAd and opHistoryAdLike are the history file's records.
	opHistoryAd     OpKind = 19
	opHistoryAdLike OpKind = 20
	// opReserve reserves a cluster number for an owner (NextCluster), and
	// may end the owner's oldest reservation to keep their number bounded.
	opReserve OpKind = 22
	// opHistorySeq numbers the history records that follow it in its frame,
	// in the log (OpRetire) and in the history file: the first is record
	// number N, counted from the store's first. Recovery compares the two
	// to append what a crash kept out of the history file.
	opHistorySeq OpKind = 23
)

// encoder appends operations to buf. Consecutive ads are stored as
// differences from the one before, which is what makes a large cluster of
// near-identical jobs cheap; reset starts a new frame or transaction.
type encoder struct {
	buf  []byte
	prev bool
	// Attribute name → expression and its source, of the previous ad and
	// of the current one.
	prevSrc, curSrc map[string]exprSrc
}

type exprSrc struct {
	x   classad.Expr
	src string
}

func (e *encoder) reset() {
	e.prev = false
	clear(e.prevSrc)
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int)     { e.buf = binary.AppendVarint(e.buf, int64(v)) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) id(id JobID)      { e.varint(id.Cluster); e.varint(id.Proc) }

// op appends one operation.
func (e *encoder) op(o Op) error {
	switch o.kind {
	case OpNewJob, OpRetire:
		if o.ad == nil {
			return errors.New("nil ad")
		}
		if o.kind == OpNewJob {
			e.ad(o.ad, OpNewJob, opNewJobLike, &o.id)
		} else {
			e.ad(o.ad, OpRetire, opRetireLike, &o.id)
		}
	case opHistoryAd:
		if o.ad == nil {
			return errors.New("nil ad")
		}
		e.ad(o.ad, opHistoryAd, opHistoryAdLike, nil)
	case OpUseCluster:
		e.buf = append(e.buf, byte(o.kind))
		e.varint(o.id.Cluster)
		e.str(o.name)
	case opReserve:
		e.buf = append(e.buf, byte(o.kind))
		e.varint(o.id.Cluster)
		e.str(o.name)
		e.varint(o.id.Proc)
	case OpSet:
		e.buf = append(e.buf, byte(o.kind))
		e.id(o.id)
		e.str(o.name)
		e.str(o.expr.String())
	case OpDelete:
		e.buf = append(e.buf, byte(o.kind))
		e.id(o.id)
		e.str(o.name)
	case OpDestroy:
		e.buf = append(e.buf, byte(o.kind))
		e.id(o.id)
	case opNewCluster, opNextCluster, opSnapshotEnd, opHistorySeq:
		e.buf = append(e.buf, byte(o.kind))
		e.varint(o.id.Cluster)
	default:
		return fmt.Errorf("unknown operation %s", o.kind)
	}
	return nil
}

// ad appends ad as a full record (code full) or, when an ad precedes it, as
// a difference from that ad (code like). id, if not nil, is written first.
func (e *encoder) ad(ad *classad.ClassAd, full, like OpKind, id *JobID) {
	names := ad.Names()
	if e.curSrc == nil {
		e.curSrc = make(map[string]exprSrc, len(names))
		e.prevSrc = make(map[string]exprSrc, len(names))
	}
	clear(e.curSrc)
	for _, n := range names {
		x, _ := ad.Lookup(n)
		// Jobs of one submission usually share expression values, so
		// the previous ad often spares printing one again.
		if p, ok := e.prevSrc[n]; ok && p.x == x {
			e.curSrc[n] = p
		} else {
			e.curSrc[n] = exprSrc{x, x.String()}
		}
	}
	if !e.prev {
		e.buf = append(e.buf, byte(full))
		if id != nil {
			e.id(*id)
		}
		e.uvarint(uint64(len(names)))
		for _, n := range names {
			e.str(n)
			e.str(e.curSrc[n].src)
		}
	} else {
		e.buf = append(e.buf, byte(like))
		if id != nil {
			e.id(*id)
		}
		drop := 0
		for n := range e.prevSrc {
			if _, ok := e.curSrc[n]; !ok {
				drop++
			}
		}
		e.uvarint(uint64(drop))
		for n := range e.prevSrc {
			if _, ok := e.curSrc[n]; !ok {
				e.str(n)
			}
		}
		set := 0
		for _, n := range names {
			if p, ok := e.prevSrc[n]; !ok || p.src != e.curSrc[n].src {
				set++
			}
		}
		e.uvarint(uint64(set))
		for _, n := range names {
			if p, ok := e.prevSrc[n]; !ok || p.src != e.curSrc[n].src {
				e.str(n)
				e.str(e.curSrc[n].src)
			}
		}
	}
	e.prev = true
	e.prevSrc, e.curSrc = e.curSrc, e.prevSrc
}

// decoder reads the operations of one frame payload.
type decoder struct {
	b     []byte
	prev  *classad.ClassAd
	cache map[string]classad.Expr // parsed expressions of this frame, by source
}

func newDecoder(payload []byte) *decoder { return &decoder{b: payload} }

var errTruncated = errors.New("truncated operation")

func (d *decoder) more() bool { return len(d.b) > 0 }

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		return 0, errTruncated
	}
	d.b = d.b[n:]
	return v, nil
}

func (d *decoder) varint() (int, error) {
	v, n := binary.Varint(d.b)
	if n <= 0 || v != int64(int(v)) {
		return 0, errTruncated
	}
	d.b = d.b[n:]
	return int(v), nil
}

func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) {
		return nil, errTruncated
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) str() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func (d *decoder) id() (JobID, error) {
	c, err := d.varint()
	if err != nil {
		return JobID{}, err
	}
	p, err := d.varint()
	return JobID{Cluster: c, Proc: p}, err
}

// expr parses an expression, sharing the result with earlier uses of the
// same source in this frame: expressions are immutable.
func (d *decoder) expr() (classad.Expr, error) {
	b, err := d.bytes()
	if err != nil {
		return classad.Expr{}, err
	}
	if x, ok := d.cache[string(b)]; ok {
		return x, nil
	}
	src := string(b)
	x, err := classad.ParseExpr(src)
	if err != nil {
		return classad.Expr{}, fmt.Errorf("expression %q: %w", src, err)
	}
	if d.cache == nil {
		d.cache = make(map[string]classad.Expr)
	}
	d.cache[src] = x
	return x, nil
}

// count reads an element count, bounded by the bytes left so that damaged
// input cannot make it allocate much.
func (d *decoder) count() (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)) {
		return 0, errTruncated
	}
	return int(n), nil
}

// op reads one operation. Ads come back as OpNewJob, OpRetire or
// opHistoryAd, whichever way they were stored. opHistorySeq carries its
// number in id.Cluster.
func (d *decoder) op() (Op, error) {
	if len(d.b) == 0 {
		return Op{}, errTruncated
	}
	kind := OpKind(d.b[0])
	d.b = d.b[1:]
	o := Op{kind: kind}
	var err error
	switch kind {
	case opNewCluster, opNextCluster, opSnapshotEnd:
		o.id.Cluster, err = d.varint()
	case opHistorySeq:
		if o.id.Cluster, err = d.varint(); err == nil && o.id.Cluster < 0 {
			err = errors.New("negative record number")
		}
	case OpNewJob, opNewJobLike:
		o.kind = OpNewJob
		if o.id, err = d.id(); err == nil {
			o.ad, err = d.ad(kind == opNewJobLike)
		}
	case OpRetire, opRetireLike:
		o.kind = OpRetire
		if o.id, err = d.id(); err == nil {
			o.ad, err = d.ad(kind == opRetireLike)
		}
	case OpUseCluster:
		if o.id.Cluster, err = d.varint(); err == nil {
			o.name, err = d.str()
		}
	case opReserve:
		if o.id.Cluster, err = d.varint(); err == nil {
			if o.name, err = d.str(); err == nil {
				o.id.Proc, err = d.varint()
			}
		}
	case opHistoryAd, opHistoryAdLike:
		o.kind = opHistoryAd
		o.ad, err = d.ad(kind == opHistoryAdLike)
	case OpSet:
		if o.id, err = d.id(); err == nil {
			if o.name, err = d.str(); err == nil {
				o.expr, err = d.expr()
			}
		}
	case OpDelete:
		if o.id, err = d.id(); err == nil {
			o.name, err = d.str()
		}
	case OpDestroy:
		o.id, err = d.id()
	default:
		return Op{}, fmt.Errorf("unknown operation code %d", kind)
	}
	if err != nil {
		return Op{}, fmt.Errorf("%s: %w", o.kind, err)
	}
	return o, nil
}

func (d *decoder) ad(like bool) (*classad.ClassAd, error) {
	var ad *classad.ClassAd
	if like {
		if d.prev == nil {
			return nil, errors.New("difference from no ad")
		}
		ad = d.prev.Copy()
		n, err := d.count()
		if err != nil {
			return nil, err
		}
		for range n {
			name, err := d.str()
			if err != nil {
				return nil, err
			}
			ad.Delete(name)
		}
	} else {
		ad = classad.New()
	}
	n, err := d.count()
	if err != nil {
		return nil, err
	}
	for range n {
		name, err := d.str()
		if err != nil {
			return nil, err
		}
		x, err := d.expr()
		if err != nil {
			return nil, err
		}
		ad.Set(name, x)
	}
	d.prev = ad
	return ad, nil
}
