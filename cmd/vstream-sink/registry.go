package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/vstream-cdc/vstream/internal/cliconfig"
	"github.com/vstream-cdc/vstream/internal/secure"
	"github.com/vstream-cdc/vstream/server/encoder/avro"
	"github.com/vstream-cdc/vstream/sink/registry"
)

// registryConfig is the schema registry's part of the configuration (inline in config's YAML).
type registryConfig struct {
	URL           string `yaml:"schema-registry-url"`
	User          string `yaml:"schema-registry-user"`
	Password      string `yaml:"schema-registry-password"`
	PasswordFile  string `yaml:"schema-registry-password-file"`
	Token         string `yaml:"schema-registry-token"`
	TokenFile     string `yaml:"schema-registry-token-file"`
	TLSCA         string `yaml:"schema-registry-tls-ca"`
	TLSCert       string `yaml:"schema-registry-tls-cert"`
	TLSKey        string `yaml:"schema-registry-tls-key"`
	TLSServerName string `yaml:"schema-registry-tls-server-name"`
	// SubjectStrategy is the subject naming; only Confluent's default is supported, and the
	// key says so in the configuration rather than leaving it implied.
	SubjectStrategy string `yaml:"schema-registry-subject-strategy"`
}

// registryFlagDefs are appended to flagDefs (init below), so that the registry's keys live
// beside the code that reads them.
var registryFlagDefs = []cliconfig.Flag[config]{
	{Name: "schema-registry-url", Usage: "Confluent schema registry URL(s), separated by commas: with format avro and sink kafka, schemas are registered there and records framed with its ids (default: off, the stream's own schema messages are published)", Field: func(c *config) *string { return &c.Registry.URL }},
	{Name: "schema-registry-user", Usage: "schema registry basic-auth user (an API key)", Field: func(c *config) *string { return &c.Registry.User }},
	{Name: "schema-registry-password", Usage: "schema registry basic-auth password (better from the environment or schema-registry-password-file)", Field: func(c *config) *string { return &c.Registry.Password }},
	{Name: "schema-registry-password-file", Usage: "file holding the schema registry password", Field: func(c *config) *string { return &c.Registry.PasswordFile }},
	{Name: "schema-registry-token", Usage: "schema registry bearer token (better from the environment or schema-registry-token-file)", Field: func(c *config) *string { return &c.Registry.Token }},
	{Name: "schema-registry-token-file", Usage: "file holding the schema registry bearer token", Field: func(c *config) *string { return &c.Registry.TokenFile }},
	{Name: "schema-registry-tls-ca", Usage: "PEM CA file that verifies an https registry's certificate (default: the system's roots)", Field: func(c *config) *string { return &c.Registry.TLSCA }},
	{Name: "schema-registry-tls-cert", Usage: "PEM client certificate for the registry (with schema-registry-tls-key)", Field: func(c *config) *string { return &c.Registry.TLSCert }},
	{Name: "schema-registry-tls-key", Usage: "PEM private key of schema-registry-tls-cert", Field: func(c *config) *string { return &c.Registry.TLSKey }},
	{Name: "schema-registry-tls-server-name", Usage: "name the registry's certificate must hold, when not the URL's host", Field: func(c *config) *string { return &c.Registry.TLSServerName }},
	{Name: "schema-registry-subject-strategy", Usage: "subject naming: topic (TopicNameStrategy, <topic>-key and <topic>-value; the only one)", Field: func(c *config) *string { return &c.Registry.SubjectStrategy }, Default: "topic"},
}

func init() { flagDefs = append(flagDefs, registryFlagDefs...) }

// registryOptions checks the registry's keys and returns the registry's options; nil when no
// registry is configured.
func (c *config) registryOptions() (*registry.Options, error) {
	r := c.Registry
	if r.SubjectStrategy != "topic" {
		return nil, fmt.Errorf("schema-registry-subject-strategy %q: only topic (TopicNameStrategy) is supported", r.SubjectStrategy)
	}
	if r.URL == "" {
		if r != (registryConfig{SubjectStrategy: r.SubjectStrategy}) {
			return nil, errors.New("schema-registry- keys given without schema-registry-url")
		}
		return nil, nil
	}
	if c.Format != avro.Name {
		return nil, fmt.Errorf("schema-registry-url goes with format avro, not %s", c.Format)
	}
	if c.Sink != "kafka" {
		return nil, fmt.Errorf("schema-registry-url goes with sink kafka, not %s", c.Sink)
	}
	o := &registry.Options{User: r.User}
	https := false
	for u := range strings.SplitSeq(r.URL, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("schema-registry-url %q: want http://host:port or https://host:port", u)
		}
		https = https || pu.Scheme == "https"
		o.URLs = append(o.URLs, u)
	}
	var err error
	if o.Password, err = secure.Secret("schema-registry-password", r.Password, r.PasswordFile); err != nil {
		return nil, err
	}
	if o.Token, err = secure.Secret("schema-registry-token", r.Token, r.TokenFile); err != nil {
		return nil, err
	}
	if (o.User == "") != (o.Password == "") {
		return nil, errors.New("schema-registry-user and schema-registry-password go together")
	}
	if o.Token != "" && o.User != "" {
		return nil, errors.New("schema-registry-user/-password and schema-registry-token: give one of them")
	}
	files := secure.TLSFiles{On: https, CA: r.TLSCA, Cert: r.TLSCert, Key: r.TLSKey, ServerName: r.TLSServerName}
	if files.Enabled() && !https {
		return nil, errors.New("schema-registry-tls- keys given with an http:// schema-registry-url: use https://")
	}
	if o.TLS, err = files.Config("schema-registry-"); err != nil {
		return nil, err
	}
	return o, nil
}

// newRegistry makes the sink's registry client; nil when none is configured.
func newRegistry(cfg *config, log *slog.Logger) (*registry.Registry, error) {
	o := cfg.parsed.registry
	if o == nil {
		return nil, nil
	}
	o.Logger = log
	return registry.New(*o)
}
