package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	natsgo "github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vstream-cdc/vstream/internal/secure"
)

// The credentials of the three connections: vstreamd, Kafka and NATS. Secrets come from a
// key (best set through the environment, VSTREAM_SINK_...) or from a file; they are read
// here, once, and never put in an error or a log line.

func boolKey(name, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}

func (c *config) validateServerAuth() error {
	p := &c.parsed
	var err error
	if p.token, err = secure.Secret("token", c.Token, c.TokenFile); err != nil {
		return err
	}
	on, err := boolKey("tls", c.TLS)
	if err != nil {
		return err
	}
	p.serverTLS, err = secure.TLSFiles{On: on, CA: c.TLSCA, Cert: c.TLSCert, Key: c.TLSKey, ServerName: c.TLSServerName}.Config("")
	return err
}

func (c *config) validateKafkaAuth() error {
	p := &c.parsed
	on, err := boolKey("kafka-tls", c.KafkaTLS)
	if err != nil {
		return err
	}
	files := secure.TLSFiles{On: on, CA: c.KafkaTLSCA, Cert: c.KafkaTLSCert, Key: c.KafkaTLSKey, ServerName: c.KafkaTLSServerName}
	if p.kafkaTLS, err = files.Config("kafka-"); err != nil {
		return err
	}
	mech := strings.ToLower(c.KafkaSASLMechanism)
	userPass := func() (string, string, error) {
		if c.KafkaSASLToken != "" || c.KafkaSASLTokenFile != "" {
			return "", "", fmt.Errorf("kafka-sasl-token goes with kafka-sasl-mechanism oauthbearer, not %s", mech)
		}
		pass, err := secure.Secret("kafka-sasl-password", c.KafkaSASLPassword, c.KafkaSASLPasswordFile)
		if err != nil {
			return "", "", err
		}
		if c.KafkaSASLUser == "" || pass == "" {
			return "", "", fmt.Errorf("kafka-sasl-mechanism %s needs kafka-sasl-user and kafka-sasl-password (or kafka-sasl-password-file)", mech)
		}
		return c.KafkaSASLUser, pass, nil
	}
	var m sasl.Mechanism
	switch mech {
	case "":
		if c.KafkaSASLUser != "" || c.KafkaSASLPassword != "" || c.KafkaSASLPasswordFile != "" || c.KafkaSASLToken != "" || c.KafkaSASLTokenFile != "" {
			return errors.New("kafka-sasl-user, -password or -token given without kafka-sasl-mechanism: want plain, scram-sha-256, scram-sha-512 or oauthbearer")
		}
		return nil
	case "plain":
		user, pass, err := userPass()
		if err != nil {
			return err
		}
		m = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case "scram-sha-256", "scram-sha-512":
		user, pass, err := userPass()
		if err != nil {
			return err
		}
		a := scram.Auth{User: user, Pass: pass}
		if mech == "scram-sha-256" {
			m = a.AsSha256Mechanism()
		} else {
			m = a.AsSha512Mechanism()
		}
	case "oauthbearer":
		if c.KafkaSASLUser != "" || c.KafkaSASLPassword != "" || c.KafkaSASLPasswordFile != "" {
			return errors.New("kafka-sasl-mechanism oauthbearer takes kafka-sasl-token (or kafka-sasl-token-file), not a user and password")
		}
		tok, err := secure.Secret("kafka-sasl-token", c.KafkaSASLToken, c.KafkaSASLTokenFile)
		if err != nil {
			return err
		}
		if tok == "" {
			return errors.New("kafka-sasl-mechanism oauthbearer needs kafka-sasl-token or kafka-sasl-token-file")
		}
		file := c.KafkaSASLTokenFile
		m = oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			if file == "" {
				return oauth.Auth{Token: tok}, nil
			}
			// Read at every connection, so that a token refreshed in the file is used.
			t, err := secure.Secret("kafka-sasl-token", "", file)
			return oauth.Auth{Token: t}, err
		})
	default:
		return fmt.Errorf("kafka-sasl-mechanism %q: want plain, scram-sha-256, scram-sha-512 or oauthbearer", c.KafkaSASLMechanism)
	}
	p.kafkaSASL = []kgo.Opt{kgo.SASL(m)}
	p.kafkaAuth = "SASL " + strings.ToUpper(mech)
	if c.KafkaSASLUser != "" {
		p.kafkaAuth += " as user " + c.KafkaSASLUser
	}
	return nil
}

// kafkaOpts are the Kafka client options of the configured TLS and SASL.
func (p *settings) kafkaOpts() []kgo.Opt {
	opts := append([]kgo.Opt(nil), p.kafkaSASL...)
	if p.kafkaTLS != nil {
		opts = append(opts, kgo.DialTLSConfig(p.kafkaTLS))
	}
	return opts
}

func (c *config) validateNATSAuth() error {
	p := &c.parsed
	on, err := boolKey("nats-tls", c.NATSTLS)
	if err != nil {
		return err
	}
	files := secure.TLSFiles{On: on, CA: c.NATSTLSCA, Cert: c.NATSTLSCert, Key: c.NATSTLSKey, ServerName: c.NATSTLSServerName}
	if p.natsTLS, err = files.Config("nats-"); err != nil {
		return err
	}
	if p.natsTLS != nil {
		p.natsAuth = append(p.natsAuth, natsgo.Secure(p.natsTLS))
	}
	pass, err := secure.Secret("nats-password", c.NATSPassword, c.NATSPasswordFile)
	if err != nil {
		return err
	}
	tok, err := secure.Secret("nats-token", c.NATSToken, c.NATSTokenFile)
	if err != nil {
		return err
	}
	n := 0
	if c.NATSUser != "" || pass != "" {
		if c.NATSUser == "" || pass == "" {
			return errors.New("nats-user and nats-password go together: give both or neither")
		}
		n++
		p.natsAuth = append(p.natsAuth, natsgo.UserInfo(c.NATSUser, pass))
	}
	if tok != "" {
		n++
		p.natsAuth = append(p.natsAuth, natsgo.Token(tok))
	}
	if c.NATSNKeySeedFile != "" {
		n++
		opt, err := natsgo.NkeyOptionFromSeed(c.NATSNKeySeedFile)
		if err != nil {
			// The error names what is wrong with the seed, never the seed.
			return fmt.Errorf("nats-nkey-seed-file %s: %w", c.NATSNKeySeedFile, err)
		}
		p.natsAuth = append(p.natsAuth, opt)
	}
	if c.NATSCredsFile != "" {
		n++
		p.natsAuth = append(p.natsAuth, natsgo.UserCredentials(c.NATSCredsFile))
	}
	if n > 1 {
		return errors.New("nats credentials: give one of nats-user/nats-password, nats-token, nats-nkey-seed-file and nats-creds-file")
	}
	return nil
}
