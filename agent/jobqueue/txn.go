package jobqueue

import (
	"strconv"

	"harrier.dev/harrier/classad"
)

// OpKind says what an [Op] does.
type OpKind uint8

// The mutations a transaction can hold. The numbers are stored on disk.
// Code 1 is a legacy record (a cluster number reserved without an owner)
// that old logs may still hold.
const (
	// OpNewJob adds a job with its ad.
	OpNewJob OpKind = 2
	// OpSet sets one attribute of a job to an expression.
	OpSet OpKind = 3
	// OpDelete removes one attribute of a job; removing a missing one is
	// not an error.
	OpDelete OpKind = 4
	// OpDestroy removes a job from the queue.
	OpDestroy OpKind = 5
	// OpRetire removes a job from the queue and appends its final ad to
	// the history, as one change.
	OpRetire OpKind = 6
	// OpUseCluster uses up an owner's reservation of a cluster number
	// (see [Store.NextCluster]).
	OpUseCluster OpKind = 7
)

func (k OpKind) String() string {
	switch k {
	case opNewCluster:
		return "NewCluster"
	case OpNewJob:
		return "NewJob"
	case OpSet:
		return "Set"
	case OpDelete:
		return "Delete"
	case OpDestroy:
		return "Destroy"
	case OpRetire:
		return "Retire"
	case OpUseCluster:
		return "UseCluster"
	case opNextCluster:
		return "NextCluster"
	case opReserve:
		return "Reserve"
	case opHistorySeq:
		return "HistorySeq"
	case opHistoryAd:
		return "HistoryAd"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one mutation of the queue. Stores other than [Log] read a
// transaction through [Txn.Ops] and these accessors.
type Op struct {
	kind OpKind
	// The job, or for the records only the store writes, their numbers:
	// opReserve reserves id.Cluster and ends the reservation id.Proc (0
	// for none); opHistorySeq and the counters carry theirs in id.Cluster.
	id   JobID
	name string // attribute of OpSet and OpDelete; owner of OpUseCluster and opReserve
	expr classad.Expr
	ad   *classad.ClassAd
}

// Kind reports what the operation does.
func (o Op) Kind() OpKind { return o.kind }

// Job is the job the operation acts on. For OpUseCluster only Cluster is
// set.
func (o Op) Job() JobID { return o.id }

// Name is the attribute name of OpSet and OpDelete.
func (o Op) Name() string { return o.name }

// Owner is the owner whose reservation OpUseCluster uses.
func (o Op) Owner() string { return o.name }

// Expr is the new value of OpSet.
func (o Op) Expr() classad.Expr { return o.expr }

// Ad is the ad of OpNewJob, or the history record of OpRetire. It belongs
// to the transaction: do not modify it.
func (o Op) Ad() *classad.ClassAd { return o.ad }

// Txn is a batch of operations that a [Store] applies atomically and in
// order: after a crash either all of them are in the queue or none is.
// The zero Txn is empty and ready to use. A Txn is not safe for concurrent
// use, and must not be changed while a Commit of it is in progress.
type Txn struct {
	ops []Op
}

// UseCluster uses up owner's reservation of cluster: the commit fails with
// [ErrNotReserved] unless [Store.NextCluster] reserved cluster for owner and
// no transaction has used the reservation since. A submission commits it
// with the cluster's jobs, so that a cluster is filled once, by the user
// who was given it, and a job id is never used twice.
func (t *Txn) UseCluster(cluster int, owner string) {
	t.ops = append(t.ops, Op{kind: OpUseCluster, id: JobID{Cluster: cluster}, name: owner})
}

// NewJob adds job id with ad ad. The transaction takes ownership of ad:
// the caller must not modify it afterwards (this spares copying every ad
// of a large submission). The commit fails with [ErrExists] if id is
// already in the queue.
func (t *Txn) NewJob(id JobID, ad *classad.ClassAd) {
	t.ops = append(t.ops, Op{kind: OpNewJob, id: id, ad: ad})
}

// Set sets attribute name of job id to value. The commit fails with
// [ErrNotFound] if the job is not in the queue.
func (t *Txn) Set(id JobID, name string, value classad.Expr) {
	t.ops = append(t.ops, Op{kind: OpSet, id: id, name: name, expr: value})
}

// SetValue sets attribute name of job id to the literal value.
func (t *Txn) SetValue(id JobID, name string, value classad.Value) {
	t.Set(id, name, classad.Literal(value))
}

// Delete removes attribute name from job id. The commit fails with
// [ErrNotFound] if the job is not in the queue.
func (t *Txn) Delete(id JobID, name string) {
	t.ops = append(t.ops, Op{kind: OpDelete, id: id, name: name})
}

// Destroy removes job id from the queue. The commit fails with
// [ErrNotFound] if the job is not in the queue.
func (t *Txn) Destroy(id JobID) {
	t.ops = append(t.ops, Op{kind: OpDestroy, id: id})
}

// Retire removes job id from the queue and appends ad, its final ad, to the
// history, in the same transaction: once the commit returns the job is in
// the history and not in the queue, and if it fails (or the machine
// crashes first) it is still in the queue and not in the history. The
// transaction takes ownership of ad, as NewJob does. The commit fails with
// [ErrNotFound] if the job is not in the queue.
func (t *Txn) Retire(id JobID, ad *classad.ClassAd) {
	t.ops = append(t.ops, Op{kind: OpRetire, id: id, ad: ad})
}

// Ops returns the operations in the order they apply. The slice is the
// transaction's own: do not modify it.
func (t *Txn) Ops() []Op { return t.ops }

// Len reports the number of operations.
func (t *Txn) Len() int { return len(t.ops) }
