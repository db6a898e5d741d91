package common

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Address is HOST:PORT from the lab's environment (HOST defaults to 127.0.0.1).
func Address() string {
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, os.Getenv("PORT"))
}

// Setup loads the contract and opens the store, or exits saying why; it
// starts the opt-in profiling endpoint too (profiling.go).
func Setup() (*Contract, *Store) {
	ServeProfiling()
	contract, err := LoadContract()
	if err != nil {
		log.Fatal(err)
	}
	store, err := NewStore(contract)
	if err != nil {
		log.Fatal(err)
	}
	return contract, store
}

// Listen opens the service's TCP listener on HOST:PORT (Go sets TCP_NODELAY
// on every accepted connection by default): cleartext, or TLS when the lab
// asks for it (TLSConfig), offering the ALPN protocols `alpn`. The one place a
// Go service's listener is chosen; gRPC, whose library does its own TLS, takes
// the plain listener of ListenTCP and TLSConfig's credentials.
func Listen(alpn ...string) net.Listener {
	listener := ListenTCP()
	if config := TLSConfig(alpn...); config != nil {
		return tls.NewListener(listener, config)
	}
	return listener
}

// ListenTCP opens the service's cleartext TCP listener on HOST:PORT.
func ListenTCP() net.Listener {
	listener, err := net.Listen("tcp", Address())
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", Address(), err)
	}
	return listener
}

// Stopping is a context cancelled by SIGTERM or SIGINT.
func Stopping() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
