// Package wire holds Harrier's gRPC protocol (generated from
// proto/harrier/v1/harrier.proto; the generated code is committed) and the
// few helpers every daemon uses to serve and dial it over mutual TLS.
//
// Remote I/O moves most of the bytes, so the connections are set up for
// it: a codec that sends and decodes the data of reads and writes without
// the usual copies (same encoding), Buffers that a server's reads and
// writes reuse, TLS records gathered into one socket write per gRPC write,
// and gRPC buffers that are neither cleared nor held by idle connections.
//
// Regenerate after editing the .proto file (scripts/setup --dev installs the
// plugins):
//
//	go generate ./wire
package wire

//go:generate sh -c "protoc -I ../proto --go_out=.. --go_opt=module=harrier.dev/harrier --go-grpc_out=.. --go-grpc_opt=module=harrier.dev/harrier ../proto/harrier/v1/*.proto"
