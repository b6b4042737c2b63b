package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vstream-cdc/vstream/internal/secure/securetest"
	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testdb"
	"github.com/vstream-cdc/vstream/internal/testserver"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/sink"
)

var db *testdb.Server

func TestMain(m *testing.M) {
	os.Exit(testdb.RunTests(m, testdb.Options{Database: "sinkcmd"}, &db))
}

// syncBuffer is the stderr of a run that a test reads while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runFails runs vstream-sink, which must stop with exit status 1 within a minute, and
// returns what it wrote; that must not hold secret.
func runFails(t *testing.T, args []string, environ map[string]string, secret string) string {
	t.Helper()
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, env(environ), &stderr) }()
	select {
	case c := <-code:
		if c != 1 {
			t.Fatalf("exit %d, want 1:\n%s", c, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("still running after a minute:\n%s", stderr.String())
	}
	out := stderr.String()
	if strings.Contains(out, secret) {
		t.Fatalf("the secret %q is in the output:\n%s", secret, out)
	}
	return out
}

func tlsFiles(t *testing.T, ca, cert, key string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, ClientCAs: pool, Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
}

// configBroker is a sinktest.Broker whose publishers vstream-sink makes from args, as the
// command does, so that an exactly-once run goes through the flags of its credentials.
func configBroker(args []string, environ map[string]string, read func(t testing.TB, want int, quiet time.Duration) []sinktest.Got) sinktest.Broker {
	return sinktest.Broker{
		New: func(t testing.TB, name string) sink.Publisher {
			cfg, err := loadConfig(append(args, "--name", name), env(environ))
			if err != nil {
				t.Fatal(err)
			}
			pub, err := newPublisher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return pub
		},
		Read: read,
	}
}

// TestKafkaSASL: vstream-sink against a Kafka (kfake) that wants SASL over TLS, with each
// mechanism: the right password delivers every change exactly once, a wrong one stops the
// sink with an error that names Kafka and not the password.
func TestKafkaSASL(t *testing.T) {
	certs := securetest.New(t)
	const user, pass = "sinker", "kafka-pass-Zq8w"
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			serverTLS := tlsFiles(t, certs.CA, certs.ServerCert, certs.ServerKey)
			cluster := sinktest.KafkaSASLCluster(t, 3, user, pass, serverTLS, mech)
			// kfake closes the connection on credentials it refuses; a broker answers first
			// with SASL_AUTHENTICATION_FAILED, which RefuseSASL makes kfake do.
			sinktest.RefuseSASL(t, cluster, tlsFiles(t, certs.CA, certs.ClientCert, certs.ClientKey), mech, user, pass)
			brokers := cluster.ListenAddrs()
			args := []string{"--sink", "kafka", "--format", "debezium-json", "--kafka-brokers", strings.Join(brokers, ","),
				"--kafka-sasl-mechanism", strings.ToLower(mech), "--kafka-sasl-user", user, "--kafka-tls-ca", certs.CA}
			t.Run("wrong password", func(t *testing.T) {
				out := runFails(t, append(args, "--server", "127.0.0.1:1"), map[string]string{"VSTREAM_SINK_KAFKA_SASL_PASSWORD": "wrong-" + pass}, "wrong-"+pass)
				for _, want := range []string{"kafka " + brokers[0] + " refused the credentials (SASL " + mech + " as user " + user + ")", "SASL_AUTHENTICATION_FAILED"} {
					if !strings.Contains(out, want) {
						t.Fatalf("the error does not say %q:\n%s", want, out)
					}
				}
			})
			t.Run("unknown CA", func(t *testing.T) {
				a := append(append([]string(nil), args...), "--server", "127.0.0.1:1")
				a[len(a)-3] = certs.OtherCA
				out := runFails(t, a, map[string]string{"VSTREAM_SINK_KAFKA_SASL_PASSWORD": pass}, pass)
				if !strings.Contains(out, "kafka "+brokers[0]+": TLS handshake refused") || !strings.Contains(out, "unknown authority") {
					t.Fatalf("the error does not name Kafka and the TLS refusal:\n%s", out)
				}
			})
			t.Run("exactly once", func(t *testing.T) {
				var m kgo.Opt
				switch mech {
				case "PLAIN":
					m = kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
				case "SCRAM-SHA-256":
					m = kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
				default:
					m = kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
				}
				readTLS := tlsFiles(t, certs.CA, certs.ClientCert, certs.ClientKey)
				pwFile := filepath.Join(t.TempDir(), "pw")
				if err := os.WriteFile(pwFile, []byte(pass+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				b := configBroker(append(args, "--kafka-sasl-password-file", pwFile), nil, func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadKafka(t, brokers, `cdc\..*`, want, quiet, m, kgo.DialTLSConfig(readTLS))
				})
				sinktest.ExactlyOnce(t, db, "sinkcmd", b, "debezium-json", nil, 0)
			})
		})
	}
}

// TestNATSAuth: vstream-sink against a real nats-server that wants each kind of
// credentials, over TLS with a client certificate: the right ones deliver every change
// exactly once, wrong ones stop the sink with an error naming NATS and not the secret.
func TestNATSAuth(t *testing.T) {
	certs := securetest.New(t)
	dir := t.TempDir()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := filepath.Join(dir, "user.nk")
	if err = os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(dir, "other.nk")
	if err = os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsConf := fmt.Sprintf("tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n", certs.ServerCert, certs.ServerKey, certs.CA)
	clientTLS := natsgo.Secure(tlsFiles(t, certs.CA, certs.ClientCert, certs.ClientKey))
	tlsArgs := []string{"--nats-tls-ca", certs.CA, "--nats-tls-cert", certs.ClientCert, "--nats-tls-key", certs.ClientKey}
	for _, tc := range []struct {
		name, auth string
		client     natsgo.Option
		right      []string
		rightEnv   map[string]string
		wrong      []string
		wrongEnv   map[string]string
		secret     string
	}{
		{name: "user and password", auth: `authorization { user: sinker, password: "nats-pass-Hx3" }`,
			client: natsgo.UserInfo("sinker", "nats-pass-Hx3"),
			right:  []string{"--nats-user", "sinker"}, rightEnv: map[string]string{"VSTREAM_SINK_NATS_PASSWORD": "nats-pass-Hx3"},
			wrong: []string{"--nats-user", "sinker"}, wrongEnv: map[string]string{"VSTREAM_SINK_NATS_PASSWORD": "bad-nats-pass-Hx3"}, secret: "bad-nats-pass-Hx3"},
		{name: "token", auth: `authorization { token: "nats-token-P9k" }`, client: natsgo.Token("nats-token-P9k"),
			rightEnv: map[string]string{"VSTREAM_SINK_NATS_TOKEN": "nats-token-P9k"},
			wrongEnv: map[string]string{"VSTREAM_SINK_NATS_TOKEN": "bad-nats-token-P9k"}, secret: "bad-nats-token-P9k"},
		{name: "nkey", auth: fmt.Sprintf("authorization { users = [ { nkey: %s } ] }", pub), client: nkeyOpt(t, seedFile),
			right: []string{"--nats-nkey-seed-file", seedFile}, wrong: []string{"--nats-nkey-seed-file", otherFile}, secret: string(otherSeed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := sinktest.StartNATSWith(t, sinktest.NATSConfig{Conf: tc.auth + "\n" + tlsConf, TLS: true,
				ClientOptions: []natsgo.Option{tc.client, clientTLS}})
			args := append([]string{"--sink", "nats", "--format", "debezium-json", "--topic-prefix", "cdc.", "--nats-url", ns.URL()}, tlsArgs...)
			t.Run("wrong", func(t *testing.T) {
				out := runFails(t, append(append([]string{"--server", "127.0.0.1:1"}, args...), tc.wrong...), tc.wrongEnv, tc.secret)
				if !strings.Contains(out, "nats") || !strings.Contains(strings.ToLower(out), "authorization") {
					t.Fatalf("the error does not name NATS and its authorization:\n%s", out)
				}
			})
			t.Run("unknown CA", func(t *testing.T) {
				a := append([]string{"--server", "127.0.0.1:1"}, args...)
				a = append(a, tc.right...)
				for i := range a {
					if a[i] == certs.CA {
						a[i] = certs.OtherCA
					}
				}
				out := runFails(t, a, tc.rightEnv, "\x00no secret here")
				if !strings.Contains(out, "nats "+ns.URL()+": TLS handshake refused") || !strings.Contains(out, "unknown authority") {
					t.Fatalf("the error does not name NATS and the TLS refusal:\n%s", out)
				}
			})
			t.Run("exactly once", func(t *testing.T) {
				b := configBroker(append(args, tc.right...), tc.rightEnv, func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
					return sinktest.ReadNATS(t, ns.URL(), "VSTREAM", want, quiet, ns.Options()...)
				})
				sinktest.ExactlyOnce(t, db, "sinkcmd", b, "debezium-json", nil, 0)
			})
		})
	}
}

func nkeyOpt(t *testing.T, file string) natsgo.Option {
	o, err := natsgo.NkeyOptionFromSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestServerTLS: vstream-sink reads from a vstreamd that wants TLS, a client certificate
// and a token: with all three it delivers, with a wrong token it stops with an error naming
// vstreamd and not the token.
func TestServerTLS(t *testing.T) {
	certs := securetest.New(t)
	const token = "vstreamd-token-Rt5"
	st := tlsFiles(t, certs.CA, certs.ServerCert, certs.ServerKey)
	st.ClientAuth = tls.RequireAndVerifyClientCert
	addr := testserver.ServeWith(t, db, "sinkcmd", server.Options{TLS: st, AuthToken: token})
	brokers := sinktest.Kafka(t, 1)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--sink", "kafka", "--format", "debezium-json", "--kafka-brokers", strings.Join(brokers, ","),
		"--server", addr, "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey,
		"--heartbeat", "200ms", "--checkpoint-interval", "200ms", "--tables", "t", "--topic-prefix", "cdc."}
	t.Run("wrong token", func(t *testing.T) {
		out := runFails(t, append(args, "--name", "wrong"), map[string]string{"VSTREAM_SINK_TOKEN": "bad-" + token}, "bad-"+token)
		if !strings.Contains(out, "vstreamd") || !strings.Contains(out, "Unauthenticated") {
			t.Fatalf("the error does not name vstreamd and the refusal:\n%s", out)
		}
	})
	// A certificate the sink cannot verify, or a client certificate vstreamd refuses, ends
	// the sink at once: a reconnect would meet the same refusal.
	for _, tc := range []struct {
		name, want string
		edit       func([]string) []string
	}{
		{"unknown CA", "certificate signed by unknown authority", func(a []string) []string { return swap(a, certs.CA, certs.OtherCA) }},
		{"wrong name", "not wrong.example", func(a []string) []string { return append(a, "--tls-server-name", "wrong.example") }},
		{"no client certificate", "remote error: tls: certificate required", func(a []string) []string {
			return swap(swap(a, certs.ClientCert, ""), certs.ClientKey, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runFails(t, append(tc.edit(args), "--name", "tls"), map[string]string{"VSTREAM_SINK_TOKEN": token}, token)
			if !strings.Contains(out, "vstreamd stream: TLS handshake refused by "+addr) || !strings.Contains(out, tc.want) {
				t.Fatalf("the error does not name vstreamd and the TLS refusal (%s):\n%s", tc.want, out)
			}
		})
	}
	t.Run("right", func(t *testing.T) {
		w := sinktest.NewWriter(t, db, 4, 1)
		var stderr syncBuffer
		code := make(chan int, 1)
		go func() { code <- run(append(args, "--name", "right", "--token-file", tokFile), env(nil), &stderr) }()
		deadline := time.Now().Add(time.Minute)
		for {
			if err := w.Txn(); err != nil {
				t.Fatal(err)
			}
			if got := sinktest.ReadKafka(t, brokers, `cdc\..*`, 1, 300*time.Millisecond); len(got) > 0 {
				break
			}
			select {
			case c := <-code:
				t.Fatalf("exit %d:\n%s", c, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("nothing delivered in a minute:\n%s", stderr.String())
			}
		}
		// run handles SIGTERM: it stops at the next transaction boundary and exits 0.
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("exit %d:\n%s", c, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no stop after SIGTERM:\n%s", stderr.String())
		}
		if strings.Contains(stderr.String(), token) {
			t.Fatalf("the token is in the log:\n%s", stderr.String())
		}
	})
}

// swap returns args with the flag whose value is from given to, or dropped with its flag
// when to is "".
func swap(args []string, from, to string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if i+1 < len(args) && args[i+1] == from {
			if to != "" {
				out = append(out, args[i], to)
			}
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// TestKafkaOAuthBearer: vstream-sink with SASL OAUTHBEARER over TLS, its token in a file.
// The brokers take one token at a time and sessions last a second; partway through, the
// token in the file is replaced and the old one refused: the sink reads the file again at
// every authentication and delivers every change exactly once. A token the brokers refuse
// stops the sink with an error naming Kafka and OAUTHBEARER, not the token.
func TestKafkaOAuthBearer(t *testing.T) {
	certs := securetest.New(t)
	var mu sync.Mutex
	current := "oauth-token-1-Kd2"
	// The test's reader has a token of its own, so that only the sink sends the others.
	const readerToken = "oauth-reader-token"
	seen := map[string]int{}
	tokFile := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
			t.Error(err)
		}
	}
	write(current)
	brokers := sinktest.KafkaOAuth(t, 3, certs.ServerTLS(t), time.Second, func(tok string) bool {
		mu.Lock()
		defer mu.Unlock()
		seen[tok]++
		if tok == readerToken {
			return true
		}
		ok := tok == current
		if ok && tok == "oauth-token-1-Kd2" && seen[tok] == 5 {
			// The token is rotated: the file gets the new one, the old one is refused.
			current = "oauth-token-2-Kd2"
			write(current)
		}
		return ok
	})
	args := []string{"--sink", "kafka", "--format", "debezium-json", "--kafka-brokers", strings.Join(brokers, ","),
		"--kafka-sasl-mechanism", "oauthbearer", "--kafka-tls-ca", certs.CA, "--kafka-tls-cert", certs.ClientCert, "--kafka-tls-key", certs.ClientKey}
	t.Run("refused token", func(t *testing.T) {
		out := runFails(t, append(args, "--server", "127.0.0.1:1"), map[string]string{"VSTREAM_SINK_KAFKA_SASL_TOKEN": "bad-oauth-token-Kd2"}, "bad-oauth-token-Kd2")
		if !strings.Contains(out, "kafka "+brokers[0]+" refused the credentials (SASL OAUTHBEARER)") || !strings.Contains(out, "invalid_token") {
			t.Fatalf("the error does not name Kafka, OAUTHBEARER and the refusal:\n%s", out)
		}
	})
	t.Run("token file re-read", func(t *testing.T) {
		readAuth := kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: readerToken}, nil
		}))
		b := configBroker(append(args, "--kafka-sasl-token-file", tokFile), nil, func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
			return sinktest.ReadKafka(t, brokers, `cdc\..*`, want, quiet, readAuth, kgo.DialTLSConfig(certs.ClientTLS(t)))
		})
		sinktest.ExactlyOnce(t, db, "sinkcmd", b, "debezium-json", nil, 4)
		mu.Lock()
		defer mu.Unlock()
		if seen["oauth-token-2-Kd2"] == 0 {
			t.Errorf("the rotated token was never sent (tokens seen: %v)", seen)
		}
		t.Logf("authentications by token: %v", seen)
	})
}

// TestNATSCreds: vstream-sink with a creds file (a user JWT and its seed) against a real
// nats-server in operator mode (an operator, a system account and an account with
// JetStream, their JWTs made here with nats-io/jwt and preloaded into the server's memory
// resolver), over mutual TLS: the right creds deliver every change exactly once; creds of a
// user signed by an account the operator never issued stop the sink with an error naming
// NATS and its authorization, without the seed.
func TestNATSCreds(t *testing.T) {
	certs := securetest.New(t)
	dir := t.TempDir()
	operator, _ := nkeys.CreateOperator()
	opPub, _ := operator.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "vstream-test"
	account := func(name string, js bool) (nkeys.KeyPair, string, string) {
		kp, _ := nkeys.CreateAccount()
		pub, _ := kp.PublicKey()
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		tok, err := ac.Encode(operator)
		if err != nil {
			t.Fatal(err)
		}
		return kp, pub, tok
	}
	_, sysPub, sysJWT := account("SYS", false)
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	acct, acctPub, acctJWT := account("CDC", true)
	creds := func(file string, signer nkeys.KeyPair, issuer string) ([]byte, string) {
		u, _ := nkeys.CreateUser()
		upub, _ := u.PublicKey()
		useed, _ := u.Seed()
		uc := jwt.NewUserClaims(upub)
		uc.Name = "sinker"
		uc.IssuerAccount = issuer
		tok, err := uc.Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		data, err := jwt.FormatUserConfig(tok, useed)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return useed, file
	}
	_, right := creds(filepath.Join(dir, "sinker.creds"), acct, "")
	stranger, _ := nkeys.CreateAccount()
	wrongSeed, wrong := creds(filepath.Join(dir, "stranger.creds"), stranger, "")
	opFile := filepath.Join(dir, "operator.jwt")
	if err := os.WriteFile(opFile, []byte(opJWT), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("operator: %q\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n"+
		"tls {\n  cert_file: %q\n  key_file: %q\n  ca_file: %q\n  verify: true\n}\n",
		opFile, sysPub, sysPub, sysJWT, acctPub, acctJWT, certs.ServerCert, certs.ServerKey, certs.CA)
	ns := sinktest.StartNATSWith(t, sinktest.NATSConfig{Conf: conf, TLS: true,
		ClientOptions: []natsgo.Option{natsgo.UserCredentials(right), natsgo.Secure(certs.ClientTLS(t))}})
	args := []string{"--sink", "nats", "--format", "debezium-json", "--topic-prefix", "cdc.", "--nats-url", ns.URL(),
		"--nats-tls-ca", certs.CA, "--nats-tls-cert", certs.ClientCert, "--nats-tls-key", certs.ClientKey}
	t.Run("wrong", func(t *testing.T) {
		out := runFails(t, append(args, "--server", "127.0.0.1:1", "--nats-creds-file", wrong), nil, string(wrongSeed))
		if !strings.Contains(out, "nats "+ns.URL()+" refused the credentials") || !strings.Contains(strings.ToLower(out), "authorization") {
			t.Fatalf("the error does not name NATS and its authorization:\n%s", out)
		}
	})
	t.Run("exactly once", func(t *testing.T) {
		b := configBroker(append(args, "--nats-creds-file", right), nil, func(t testing.TB, want int, quiet time.Duration) []sinktest.Got {
			return sinktest.ReadNATS(t, ns.URL(), "VSTREAM", want, quiet, ns.Options()...)
		})
		sinktest.ExactlyOnce(t, db, "sinkcmd", b, "debezium-json", nil, 0)
	})
}
