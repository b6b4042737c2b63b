// Package secure builds what the commands need to secure their connections: TLS client
// configurations from PEM files, and secrets read from a value or a file. vstream and
// vstream-sink use it for vstreamd, vstream-sink also for Kafka and NATS, so that every
// connection reads its certificates the same way and names its flags in its errors.
//
// Nothing here puts a secret in an error: errors name the flag and the file, never what
// the file holds.
package secure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// TLSFiles are a TLS client's settings, as files, in the flags' words.
type TLSFiles struct {
	// On turns TLS on with the system's roots when nothing else does.
	On bool
	// CA is a PEM file of the certificates that verify the server (instead of the
	// system's roots).
	CA string
	// Cert and Key are a PEM client certificate and its key, for mutual TLS.
	Cert, Key string
	// ServerName is the name the server's certificate must hold, when it is not the host
	// dialled.
	ServerName string
}

// Enabled reports whether these settings turn TLS on: On, or any file or name given.
func (f TLSFiles) Enabled() bool {
	return f.On || f.CA != "" || f.Cert != "" || f.Key != "" || f.ServerName != ""
}

// Config loads the files into a client TLS configuration, nil when TLS is off. prefix is
// put before the flag names in errors, e.g. "kafka-" for kafka-tls-ca.
func (f TLSFiles) Config(prefix string) (*tls.Config, error) {
	if !f.Enabled() {
		return nil, nil
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, fmt.Errorf("%stls-cert and %stls-key go together: give both or neither", prefix, prefix)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.ServerName}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("%stls-ca: %w", prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%stls-ca %s: no PEM certificate in it", prefix, f.CA)
		}
		cfg.RootCAs = pool
	}
	if f.Cert != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			// The error of LoadX509KeyPair names what is wrong with the PEM blocks, not
			// their content.
			return nil, fmt.Errorf("%stls-cert/%stls-key: %w", prefix, prefix, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Secret returns a secret given as a value or as a file that holds it (trimmed of
// surrounding white space), named name in errors; at most one of the two may be given.
// An empty file is an error; neither given is "".
func Secret(name, value, file string) (string, error) {
	if file == "" {
		return value, nil
	}
	if value != "" {
		return "", fmt.Errorf("%s and %s-file: give one of them", name, name)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%s-file %s: %w", name, file, pe.Err)
		}
		return "", fmt.Errorf("%s-file %s: %w", name, file, err)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("%s-file %s is empty", name, file)
	}
	return s, nil
}

// Refused reports whether err is a TLS verdict that a new connection would meet again, so
// that retrying it only hides a configuration error: a server certificate that does not
// verify (unknown authority, wrong name, expired), an alert by which the peer refused the
// handshake (a client certificate missing or not trusted), or a peer that does not speak
// TLS. A connection reset or a timeout is no verdict and is not one of them.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	// crypto/tls reports an alert received from the peer as a net.OpError of Op "remote
	// error" (its alert type is unexported).
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "remote error" {
		return true
	}
	return false
}
