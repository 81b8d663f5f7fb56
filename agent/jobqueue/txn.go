package jobqueue

import (
	"strconv"

	"harrier.dev/harrier/classad"
)

// OpKind says what an [Op] does.
type OpKind uint8

// The mutations a transaction can hold. The numbers are stored on disk.
const (
	// OpNewCluster reserves a cluster number: it is never handed out again.
	OpNewCluster OpKind = 1
	// OpNewJob adds a job with its ad.
	OpNewJob OpKind = 2
	// OpSet sets one attribute of a job to an expression.
	OpSet OpKind = 3
	// OpDelete removes one attribute of a job; removing a missing one is
	// not an error.
	OpDelete OpKind = 4
	// OpDestroy removes a job from the queue.
	OpDestroy OpKind = 5
)

func (k OpKind) String() string {
	switch k {
	case OpNewCluster:
		return "NewCluster"
	case OpNewJob:
		return "NewJob"
	case OpSet:
		return "Set"
	case OpDelete:
		return "Delete"
	case OpDestroy:
		return "Destroy"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one mutation of the queue. Stores other than [Log] read a
// transaction through [Txn.Ops] and these accessors.
type Op struct {
	kind OpKind
	id   JobID
	name string
	expr classad.Expr
	ad   *classad.ClassAd
}

// Kind reports what the operation does.
func (o Op) Kind() OpKind { return o.kind }

// Job is the job the operation acts on. For OpNewCluster only Cluster is set.
func (o Op) Job() JobID { return o.id }

// Name is the attribute name of OpSet and OpDelete.
func (o Op) Name() string { return o.name }

// Expr is the new value of OpSet.
func (o Op) Expr() classad.Expr { return o.expr }

// Ad is the ad of OpNewJob. It belongs to the transaction: do not modify it.
func (o Op) Ad() *classad.ClassAd { return o.ad }

// Txn is a batch of operations that a [Store] applies atomically and in
// order: after a crash either all of them are in the queue or none is.
// The zero Txn is empty and ready to use. A Txn is not safe for concurrent
// use, and must not be changed while a Commit of it is in progress.
type Txn struct {
	ops []Op
}

// NewCluster reserves cluster number cluster, so that NextCluster never
// returns it; adding jobs to a cluster reserves it too.
func (t *Txn) NewCluster(cluster int) {
	t.ops = append(t.ops, Op{kind: OpNewCluster, id: JobID{Cluster: cluster}})
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

// Ops returns the operations in the order they apply. The slice is the
// transaction's own: do not modify it.
func (t *Txn) Ops() []Op { return t.ops }

// Len reports the number of operations.
func (t *Txn) Len() int { return len(t.ops) }
