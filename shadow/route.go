package shadow

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// jobServer is what serves the starter of the job a link serves now.
type jobServer struct {
	shadow *service
	io     *IOServer
}

// errNoJob answers a starter that calls between jobs.
var errNoJob = status.Error(codes.Unavailable, "the shadow serves no job now")

// job returns the server of the job being served.
func (l *claimLink) job() (*jobServer, error) {
	if j := l.current.Load(); j != nil {
		return j, nil
	}
	return nil, errNoJob
}

// shadowRouter passes each call of the Shadow service to the job being
// served, which checks the caller's secret.
type shadowRouter struct {
	wire.UnimplementedShadowServer
	l *claimLink
}

func (r shadowRouter) Attach(stream wire.Shadow_AttachServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.Attach(stream)
}

func (r shadowRouter) ReadFile(req *wire.ReadFileRequest, stream wire.Shadow_ReadFileServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.ReadFile(req, stream)
}

func (r shadowRouter) PutCheckpoint(stream wire.Shadow_PutCheckpointServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.PutCheckpoint(stream)
}

func (r shadowRouter) GetCheckpoint(req *wire.GetCheckpointRequest, stream wire.Shadow_GetCheckpointServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.GetCheckpoint(req, stream)
}

func (r shadowRouter) Shell(stream wire.Shadow_ShellServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.Shell(stream)
}

func (r shadowRouter) SaveCheckpointFiles(ctx context.Context, req *wire.CheckpointFilesRequest) (*wire.CheckpointFilesReply, error) {
	j, err := r.l.job()
	if err != nil {
		return nil, err
	}
	return j.shadow.SaveCheckpointFiles(ctx, req)
}

func (r shadowRouter) RestoreCheckpointFiles(ctx context.Context, req *wire.CheckpointFilesRequest) (*wire.CheckpointFilesReply, error) {
	j, err := r.l.job()
	if err != nil {
		return nil, err
	}
	return j.shadow.RestoreCheckpointFiles(ctx, req)
}

// ioRouter passes each call of the ShadowIO service to the I/O server of
// the job being served, which checks the caller's secret.
type ioRouter struct {
	wire.UnimplementedShadowIOServer
	l *claimLink
}

// routeIO calls method on the I/O server of the job being served.
func routeIO[Req, Reply any](l *claimLink, ctx context.Context, req Req, method func(*IOServer, context.Context, Req) (Reply, error)) (Reply, error) {
	j, err := l.job()
	if err != nil {
		var none Reply
		return none, err
	}
	return method(j.io, ctx, req)
}

func (r ioRouter) Resolve(ctx context.Context, req *wire.ResolveRequest) (*wire.ResolveReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Resolve)
}

func (r ioRouter) Stat(ctx context.Context, req *wire.PathRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Stat)
}

func (r ioRouter) Open(ctx context.Context, req *wire.OpenRequest) (*wire.OpenReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Open)
}

func (r ioRouter) Reopen(ctx context.Context, req *wire.ReopenRequest) (*wire.OpenReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Reopen)
}

func (r ioRouter) Read(ctx context.Context, req *wire.ReadRequest) (*wire.ReadReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Read)
}

func (r ioRouter) Write(ctx context.Context, req *wire.WriteRequest) (*wire.WriteReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Write)
}

func (r ioRouter) Fstat(ctx context.Context, req *wire.HandleRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Fstat)
}

func (r ioRouter) Ftruncate(ctx context.Context, req *wire.TruncateRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Ftruncate)
}

func (r ioRouter) Fsync(ctx context.Context, req *wire.FsyncRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Fsync)
}

func (r ioRouter) Close(ctx context.Context, req *wire.HandleRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Close)
}

func (r ioRouter) SetAttr(ctx context.Context, req *wire.SetAttrRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).SetAttr)
}

func (r ioRouter) ReadDir(ctx context.Context, req *wire.PathRequest) (*wire.ReadDirReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).ReadDir)
}

func (r ioRouter) Mkdir(ctx context.Context, req *wire.MkdirRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Mkdir)
}

func (r ioRouter) Unlink(ctx context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Unlink)
}

func (r ioRouter) Rmdir(ctx context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Rmdir)
}

func (r ioRouter) Rename(ctx context.Context, req *wire.RenameRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Rename)
}

func (r ioRouter) Symlink(ctx context.Context, req *wire.SymlinkRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Symlink)
}

func (r ioRouter) Readlink(ctx context.Context, req *wire.PathRequest) (*wire.ReadlinkReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Readlink)
}

func (r ioRouter) Link(ctx context.Context, req *wire.LinkRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Link)
}

func (r ioRouter) Mknod(ctx context.Context, req *wire.MknodRequest) (*wire.AttrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Mknod)
}

func (r ioRouter) Getxattr(ctx context.Context, req *wire.XattrRequest) (*wire.XattrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Getxattr)
}

func (r ioRouter) Listxattr(ctx context.Context, req *wire.XattrRequest) (*wire.XattrReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Listxattr)
}

func (r ioRouter) Setxattr(ctx context.Context, req *wire.XattrRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Setxattr)
}

func (r ioRouter) Removexattr(ctx context.Context, req *wire.XattrRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Removexattr)
}

func (r ioRouter) SyncDir(ctx context.Context, req *wire.PathRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).SyncDir)
}

func (r ioRouter) Account(ctx context.Context, req *wire.AccountRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Account)
}

func (r ioRouter) Fallocate(ctx context.Context, req *wire.FallocateRequest) (*wire.ErrnoReply, error) {
	return routeIO(r.l, ctx, req, (*IOServer).Fallocate)
}

func (r shadowRouter) TransferInput(req *wire.TransferInputRequest, stream wire.Shadow_TransferInputServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.TransferInput(req, stream)
}

func (r shadowRouter) TransferOutput(stream wire.Shadow_TransferOutputServer) error {
	j, err := r.l.job()
	if err != nil {
		return err
	}
	return j.shadow.TransferOutput(stream)
}

func (r shadowRouter) ReportTransfer(ctx context.Context, req *wire.TransferReport) (*wire.TransferReportReply, error) {
	j, err := r.l.job()
	if err != nil {
		return nil, err
	}
	return j.shadow.ReportTransfer(ctx, req)
}

func (r shadowRouter) RegistryCredentials(ctx context.Context, req *wire.RegistryCredentialsRequest) (*wire.RegistryCredentialsReply, error) {
	j, err := r.l.job()
	if err != nil {
		return nil, err
	}
	return j.shadow.RegistryCredentials(ctx, req)
}
