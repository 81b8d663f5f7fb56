// Package wire holds Harrier's gRPC protocol (generated from
// proto/harrier/v1/harrier.proto; the generated code is committed) and the
// few helpers every daemon uses to serve and dial it over mutual TLS.
//
// Regenerate after editing the .proto file (scripts/setup --dev installs the
// plugins):
//
//	go generate ./wire
package wire

//go:generate sh -c "protoc -I ../proto --go_out=.. --go_opt=module=harrier.dev/harrier --go-grpc_out=.. --go-grpc_opt=module=harrier.dev/harrier ../proto/harrier/v1/*.proto"
