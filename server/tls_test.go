package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func firstBatch(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := vstreamv1.NewVStreamServiceClient(cc).Stream(ctx)
	if err != nil {
		return err
	}
	if err := st.Send(startMsg("current", nil)); err != nil {
		return err
	}
	_, err = st.Recv()
	return err
}

func TestTLS(t *testing.T) {
	ca := newCA(t)
	serverCert := ca.issue(t, "vstreamd", x509.ExtKeyUsageServerAuth)
	addr := serve(t, dbConfig(), Options{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert}}})
	if err := firstBatch(t, addr, credentials.NewTLS(&tls.Config{RootCAs: ca.pool})); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := firstBatch(t, addr, insecure.NewCredentials()); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext client on a TLS port: %v, want Unavailable", err)
	}
}

func TestMutualTLS(t *testing.T) {
	ca := newCA(t)
	serverCert := ca.issue(t, "vstreamd", x509.ExtKeyUsageServerAuth)
	clientCert := ca.issue(t, "client", x509.ExtKeyUsageClientAuth)
	addr := serve(t, dbConfig(), Options{TLS: &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert}})
	if err := firstBatch(t, addr, credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{clientCert}})); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	if err := firstBatch(t, addr, credentials.NewTLS(&tls.Config{RootCAs: ca.pool})); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	other := newCA(t).issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	if err := firstBatch(t, addr, credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{other}})); err == nil {
		t.Fatal("a client with a certificate from another CA was served")
	}
}
