package common

import (
	"crypto/tls"
	"io"
	"log"
	"os"
	"sync"
)

// TLS versions by LAB_TLS's value (lab/axes.py, axis tls): the one version the
// service accepts, as both its minimum and its maximum.
var tlsVersions = map[string]uint16{"1.3": tls.VersionTLS13, "1.2": tls.VersionTLS12}

// TLSConfig is the service's TLS configuration when the lab asks for TLS
// (LAB_TLS=1.3 or 1.2, with LAB_TLS_CERT and LAB_TLS_KEY: its certificate chain
// and key, PEM files the lab made for this run), offering the ALPN protocols
// `alpn` (e.g. "h2", "http/1.1"); nil when LAB_TLS is unset: cleartext. A bad
// setting ends the process, saying why.
func TLSConfig(alpn ...string) *tls.Config {
	want := os.Getenv("LAB_TLS")
	if want == "" {
		return nil
	}
	version, ok := tlsVersions[want]
	if !ok {
		log.Fatalf("LAB_TLS=%q: expected 1.3 or 1.2", want)
	}
	cert, err := tls.LoadX509KeyPair(os.Getenv("LAB_TLS_CERT"), os.Getenv("LAB_TLS_KEY"))
	if err != nil {
		log.Fatalf("LAB_TLS=%s: the certificate (LAB_TLS_CERT) and key (LAB_TLS_KEY): %v", want, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   version,
		MaxVersion:   version,
		NextProtos:   alpn,
		KeyLogWriter: keyLog(),
	}
}

// keyLog is the key log the lab names (SSLKEYLOGFILE, set by the wire capture:
// lab/tls.py), opened for appending, that the service writes each connection's
// TLS secrets to (NSS key log format), so that tshark decrypts what its
// clients' TLS library logs no keys for; nil without one.
var keyLog = sync.OnceValue(func() io.Writer {
	path := os.Getenv("SSLKEYLOGFILE")
	if path == "" {
		return nil
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		log.Fatalf("SSLKEYLOGFILE=%s: %v", path, err)
	}
	return file
})
