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
//
// The agent's remote API in JSON over HTTP (grpc-gateway, each method at
// POST /harrier.v1.Schedd/METHOD) and its OpenAPI description, in
// docs/openapi (see docs/remote-api.md):
//
//go:generate sh -c "protoc -I ../proto --grpc-gateway_out=.. --grpc-gateway_opt=module=harrier.dev/harrier --grpc-gateway_opt=generate_unbound_methods=true ../proto/harrier/v1/schedd.proto"
//go:generate sh -c "protoc -I ../proto --openapiv2_out=../docs/openapi --openapiv2_opt=generate_unbound_methods=true ../proto/harrier/v1/schedd.proto"
