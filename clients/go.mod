module protolab/clients

go 1.26.0

require (
	github.com/gorilla/websocket v1.5.3
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
	protolab/services v0.0.0
)

require (
	connectrpc.com/connect v1.21.1 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

// The generated protobuf package of the Go services (services/common/go/gamespb), imported, not copied.
replace protolab/services => ../services
