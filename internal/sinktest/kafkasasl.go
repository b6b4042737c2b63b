package sinktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/base64"
	"hash"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// KafkaSASL starts an in-process Kafka cluster, as Kafka does, that wants SASL: a superuser
// user with password pass under each of mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).
// With tlsCfg it also serves TLS. It returns the cluster's seed brokers.
func KafkaSASL(t testing.TB, partitions int, user, pass string, tlsCfg *tls.Config, mechanisms ...string) []string {
	t.Helper()
	return KafkaSASLCluster(t, partitions, user, pass, tlsCfg, mechanisms...).ListenAddrs()
}

// KafkaSASLCluster is KafkaSASL returning the cluster, for RefuseSASL.
func KafkaSASLCluster(t testing.TB, partitions int, user, pass string, tlsCfg *tls.Config, mechanisms ...string) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions), kfake.EnableSASL()}
	for _, m := range mechanisms {
		opts = append(opts, kfake.Superuser(m, user, pass))
	}
	if tlsCfg != nil {
		opts = append(opts, kfake.TLS(tlsCfg))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The messages a Kafka broker gives with SASL_AUTHENTICATION_FAILED (its
// PlainServerCallbackHandler and ScramSaslServer).
const (
	plainRefused = "Authentication failed: Invalid username or password"
	scramRefused = "Authentication failed during authentication due to invalid credentials with SASL mechanism "
)

// RefuseSASL makes the cluster c refuse credentials that are not user's and pass under
// mechanism as a Kafka broker does: a SaslAuthenticate response with the error
// SASL_AUTHENTICATION_FAILED and the broker's message. kfake itself closes the connection
// instead, which a client cannot tell from a network failure. Credentials that verify are
// left to kfake, which authenticates them as before. For SCRAM the user's salt is set first
// (AlterUserScramCredentials, as an administrator would), so that the client's proof can be
// checked here with the server-first message kfake sends (it always names 4096 iterations).
func RefuseSASL(t testing.TB, c *kfake.Cluster, tlsCfg *tls.Config, mechanism, user, pass string) {
	t.Helper()
	var newHash func() hash.Hash
	var mechCode int8
	switch mechanism {
	case "PLAIN":
	case "SCRAM-SHA-256":
		newHash, mechCode = sha256.New, 1
	case "SCRAM-SHA-512":
		newHash, mechCode = sha512.New, 2
	default:
		t.Fatalf("RefuseSASL: mechanism %s", mechanism)
	}
	var saltedPass []byte
	salt := make([]byte, 16)
	if newHash != nil {
		_, _ = rand.Read(salt)
		var err error
		if saltedPass, err = pbkdf2.Key(newHash, pass, salt, 4096, newHash().Size()); err != nil {
			t.Fatal(err)
		}
		setSalt(t, c, tlsCfg, mechanism, mechCode, user, pass, salt, saltedPass)
	}
	refuse := func(req *kmsg.SASLAuthenticateRequest, msg string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		return resp
	}
	var mu sync.Mutex
	// firsts are the client-first-message-bare of each SCRAM exchange under way, by the
	// client's nonce: the client-final message names the nonce, not the connection.
	firsts := map[string]string{}
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.SASLAuthenticateRequest)
		msg := string(req.SASLAuthBytes)
		if newHash == nil {
			parts := strings.SplitN(msg, "\x00", 3)
			if len(parts) != 3 || parts[1] != user || parts[2] != pass {
				return refuse(req, plainRefused), nil, true
			}
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		fields := scramFields(msg)
		if !strings.HasPrefix(msg, "c=") {
			// client-first: "n,,n=user,r=nonce"
			if i := strings.Index(msg, "n="); i >= 0 {
				firsts[fields["r"]] = msg[i:]
			}
			if fields["n"] != user {
				return refuse(req, scramRefused+mechanism), nil, true
			}
			return nil, nil, false
		}
		// client-final: "c=biws,r=<client nonce><server nonce>,p=<proof>"
		var bare string
		for nonce, b := range firsts {
			if strings.HasPrefix(fields["r"], nonce) {
				bare = b
				delete(firsts, nonce)
				break
			}
		}
		proof, err := base64.StdEncoding.DecodeString(fields["p"])
		withoutProof := msg[:max(0, strings.LastIndex(msg, ",p="))]
		serverFirst := "r=" + fields["r"] + ",s=" + base64.StdEncoding.EncodeToString(salt) + ",i=4096"
		if bare == "" || err != nil || !scramVerifies(newHash, saltedPass, bare+","+serverFirst+","+withoutProof, proof) {
			return refuse(req, scramRefused+mechanism), nil, true
		}
		return nil, nil, false
	})
}

func scramFields(msg string) map[string]string {
	f := map[string]string{}
	for _, kv := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && len(k) == 1 {
			f[k] = v
		}
	}
	return f
}

// scramVerifies is RFC 5802's check of a client proof.
func scramVerifies(newHash func() hash.Hash, saltedPass []byte, authMessage string, proof []byte) bool {
	mac := func(key []byte, s string) []byte {
		m := hmac.New(newHash, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	clientKey := mac(saltedPass, "Client Key")
	h := newHash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	sig := mac(storedKey, authMessage)
	if len(proof) != len(sig) {
		return false
	}
	got := make([]byte, len(proof))
	for i := range proof {
		got[i] = proof[i] ^ sig[i]
	}
	h = newHash()
	h.Write(got)
	return bytes.Equal(h.Sum(nil), storedKey)
}

// setSalt gives user a known salt under mechanism through the Kafka API, authenticated as
// user.
func setSalt(t testing.TB, c *kfake.Cluster, tlsCfg *tls.Config, mechanism string, mechCode int8, user, pass string, salt, saltedPass []byte) {
	t.Helper()
	a := scram.Auth{User: user, Pass: pass}
	m := a.AsSha256Mechanism()
	if mechanism == "SCRAM-SHA-512" {
		m = a.AsSha512Mechanism()
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(m)}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = user, mechCode, 4096, salt, saltedPass
	req.Upsertions = append(req.Upsertions, up)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("alter SCRAM credentials of %s: %v", r.User, err)
		}
	}
}

// KafkaOAuth starts an in-process Kafka cluster whose brokers take SASL OAUTHBEARER tokens
// that valid accepts, answering as Kafka does (RFC 7628: a refused token gets an error
// challenge, {"status":"invalid_token"}, and after the client's reply
// SASL_AUTHENTICATION_FAILED), with sessions of lifetime, after which the client
// authenticates again on the same connection (KIP-368). kfake has no OAUTHBEARER of its
// own: control functions answer SaslHandshake and SaslAuthenticate, and kfake's SASL gate
// stays off, so that the cluster does not refuse a client that skips SASL altogether; what
// this shows is what the client sends and how it takes a refusal. With tlsCfg the cluster
// serves TLS. It returns the seed brokers.
func KafkaOAuth(t testing.TB, partitions int, tlsCfg *tls.Config, lifetime time.Duration, valid func(token string) bool) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(partitions)}
	if tlsCfg != nil {
		opts = append(opts, kfake.TLS(tlsCfg))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.ControlKey(int16(kmsg.SASLHandshake), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.SASLHandshakeRequest)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = []string{"OAUTHBEARER"}
		if req.Mechanism != "OAUTHBEARER" {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		}
		return resp, nil, true
	})
	const invalid = `{"status":"invalid_token"}`
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.SASLAuthenticateRequest)
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		msg := string(req.SASLAuthBytes)
		if msg == "\x01" {
			// The client's reply to the error challenge: the broker fails the exchange.
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			m := invalid
			resp.ErrorMessage = &m
			return resp, nil, true
		}
		_, rest, _ := strings.Cut(msg, "\x01auth=Bearer ")
		token, _, _ := strings.Cut(rest, "\x01")
		if token == "" || !valid(token) {
			resp.SASLAuthBytes = []byte(invalid)
			return resp, nil, true
		}
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		return resp, nil, true
	})
	return c.ListenAddrs()
}
