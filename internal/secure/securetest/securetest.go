// Package securetest makes a throwaway certificate authority for tests: a CA, a server
// certificate for 127.0.0.1 and localhost, and a client certificate, written as PEM files.
package securetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Files are the PEM files of a throwaway CA and the certificates it signed.
type Files struct {
	// CA is the authority's certificate: it verifies both the server and the client.
	CA string
	// ServerCert and ServerKey are valid for 127.0.0.1, ::1 and localhost.
	ServerCert, ServerKey string
	// ClientCert and ClientKey name the client "vstream-test-client".
	ClientCert, ClientKey string
	// OtherCA is a second authority that signed nothing here: a client that trusts it
	// cannot verify the server.
	OtherCA string
}

// New writes a fresh CA and its certificates into a temporary directory of t.
func New(t testing.TB) Files {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := authority(t, "vstream test CA")
	_, _, otherDER := authority(t, "vstream other CA")
	f := Files{
		CA:         filepath.Join(dir, "ca.pem"),
		OtherCA:    filepath.Join(dir, "other-ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	writePEM(t, f.OtherCA, "CERTIFICATE", otherDER)
	leaf(t, caKey, caCert, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, f.ServerCert, f.ServerKey)
	leaf(t, caKey, caCert, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "vstream-test-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, f.ClientCert, f.ClientKey)
	return f
}

var serial atomic.Int64

func next() *big.Int {
	return big.NewInt(time.Now().UnixNano() + serial.Add(1))
}

func authority(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: next(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func leaf(t testing.TB, caKey *ecdsa.PrivateKey, ca *x509.Certificate, tmpl *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = next()
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ServerTLS is a server's TLS configuration: the server certificate, and client
// certificates required and verified by the CA.
func (f Files) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: f.pool(t),
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// ClientTLS is a client's TLS configuration: the CA as its roots and the client certificate.
func (f Files) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: f.pool(t), MinVersion: tls.VersionTLS12}
}

func (f Files) pool(t testing.TB) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(data) {
		t.Fatalf("%s: no certificate", f.CA)
	}
	return p
}
