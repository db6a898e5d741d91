module protolab/load/sse-client

go 1.24
