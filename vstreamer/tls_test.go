package vstreamer

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/gen/binlogdata"
	"github.com/vstream-cdc/vstream/internal/testdb"
)

// writeCerts writes a CA and a server certificate for 127.0.0.1 as PEM files in dir.
func writeCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", "CERTIFICATE", caDER)
	write("server.pem", "CERTIFICATE", der)
	write("server-key.pem", "EC PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// TestTLSToDatabase streams from a MariaDB whose user must connect over TLS: the SQL and the
// replication connections both use the configured TLS, and without it the stream is refused.
func TestTLSToDatabase(t *testing.T) {
	dir := t.TempDir()
	pool := writeCerts(t, dir)
	srv, err := testdb.Start(testdb.Options{Database: "tlsdb", ExtraArgs: []string{
		"--ssl-ca=" + filepath.Join(dir, "ca.pem"), "--ssl-cert=" + filepath.Join(dir, "server.pem"), "--ssl-key=" + filepath.Join(dir, "server-key.pem"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Exec(
		"CREATE USER 'tlsuser'@'%' IDENTIFIED BY 'pw' REQUIRE SSL",
		"GRANT ALL PRIVILEGES ON *.* TO 'tlsuser'@'%'",
		"CREATE TABLE t (id INT PRIMARY KEY)",
	); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: srv.Addr(), User: "tlsuser", Password: "pw", Database: "tlsdb",
		TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan *binlogdata.VEvent, 100)
	errc := make(chan error, 1)
	go func() {
		errc <- e.Stream(ctx, Request{Position: "current"}, func(evs []*binlogdata.VEvent) error {
			for _, ev := range evs {
				got <- ev
			}
			return nil
		})
	}()
	waitFor := func(typ binlogdata.VEventType) {
		deadline := time.After(15 * time.Second)
		for {
			select {
			case ev := <-got:
				if ev.Type == typ {
					return
				}
			case err := <-errc:
				t.Fatalf("TLS stream ended: %v", err)
			case <-deadline:
				t.Fatalf("no %s over TLS", typ)
			}
		}
	}
	// A stream from "current" sends its position first; a row written before that could
	// fall before the position.
	waitFor(binlogdata.VEventType_VGTID)
	if err := srv.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	waitFor(binlogdata.VEventType_ROW)

	cfg.TLS = nil
	plain, _ := NewEngine(cfg)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	err = plain.Stream(ctx2, Request{Position: "current"}, func([]*binlogdata.VEvent) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("without TLS: %v, want access denied", err)
	}
	cancel()
	<-errc
}
