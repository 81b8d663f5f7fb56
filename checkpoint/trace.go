package checkpoint

import "context"

// frozenKey is the context key of WithFrozen's function.
type frozenKey struct{}

// WithFrozen returns a context under which a Dump calls frozen once the
// job is frozen for its final dump, before CRIU takes it: the moment the
// image is of. The caller reads there what else the job's state is,
// outside its container (how much output it has written, say), as
// httptrace hooks a request's moments. A dump whose freeze CRIU makes
// itself (a job that could not be frozen at once) does not call it.
func WithFrozen(ctx context.Context, frozen func()) context.Context {
	return context.WithValue(ctx, frozenKey{}, frozen)
}

func frozenHook(ctx context.Context) func() {
	f, _ := ctx.Value(frozenKey{}).(func())
	return f
}
