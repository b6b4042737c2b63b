package vstreamer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
)

// AllDatabases in Config.Databases lets clients stream every database of the server but its
// system schemas.
const AllDatabases = "*"

// ErrKeyspace: the request names a keyspace this server does not stream (not allowed by
// Config.Databases, a system schema, or no such database).
var ErrKeyspace = errors.New("keyspace not served")

// systemSchemas are the server's own databases: never streamed, even under AllDatabases.
var systemSchemas = []string{"information_schema", "mysql", "performance_schema", "sys"}

// Database returns the database streamed under a requested keyspace: Config.Database under
// Config.Keyspace (and under an empty keyspace), else the database of the keyspace's name
// when Config.Databases allows it. It does not ask the server whether the database exists;
// a stream or read does, when it starts.
func (e *Engine) Database(keyspace string) (string, error) {
	if keyspace == "" || keyspace == e.cfg.Keyspace {
		return e.cfg.Database, nil
	}
	if slices.Contains(systemSchemas, strings.ToLower(keyspace)) {
		return "", fmt.Errorf("%w: keyspace %q is a system schema of the server, which is never streamed; this server streams %s",
			ErrKeyspace, keyspace, e.servedKeyspaces())
	}
	if keyspace == e.cfg.Database {
		// Its events are labelled with the configured keyspace: one name for one database.
		return "", fmt.Errorf("%w: database %q is streamed as keyspace %q; ask for that keyspace", ErrKeyspace, keyspace, e.cfg.Keyspace)
	}
	for _, d := range e.cfg.Databases {
		if d == AllDatabases || d == keyspace {
			return keyspace, nil
		}
	}
	return "", fmt.Errorf("%w: keyspace %q is not served here; this server streams %s", ErrKeyspace, keyspace, e.servedKeyspaces())
}

// Keyspaces lists the keyspaces clients may name explicitly, the configured one first; it
// does not expand AllDatabases, which it holds as "*".
func (e *Engine) Keyspaces() []string {
	ks := []string{e.cfg.Keyspace}
	for _, d := range e.cfg.Databases {
		if d != e.cfg.Database && !slices.Contains(ks, d) {
			ks = append(ks, d)
		}
	}
	return ks
}

// servedKeyspaces says which keyspaces are served, for error messages.
func (e *Engine) servedKeyspaces() string {
	ks := e.Keyspaces()
	if slices.Contains(ks, AllDatabases) {
		ks = slices.DeleteFunc(ks, func(k string) bool { return k == AllDatabases })
		return "keyspace " + strings.Join(quoteAll(ks), ", ") + " and every other database of the server but " + strings.Join(systemSchemas, ", ")
	}
	if len(ks) == 1 {
		return "keyspace " + quoteAll(ks)[0]
	}
	return "keyspaces " + strings.Join(quoteAll(ks), ", ")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// keyspaceConfig returns the configuration a stream of database db runs with: the engine's
// own for its configured database; for another, a copy naming that database and labelling
// events with its name as keyspace, without the VSchema (which describes the configured
// keyspace only). It fails with ErrKeyspace when the server has no such database.
func (e *Engine) keyspaceConfig(sqlConn func() (*client.Conn, error), db string) (*Config, error) {
	if db == e.cfg.Database {
		return &e.cfg, nil
	}
	conn, err := sqlConn()
	if err != nil {
		return nil, err
	}
	r, err := conn.Execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db)
	if err != nil {
		return nil, fmt.Errorf("%w: look up database %s: %v", ErrUnavailable, db, err)
	}
	found := false
	for i := range r.RowNumber() {
		// The comparison above ignores case; database names do not (on Linux servers), and
		// the binlog names the database as it is.
		found = found || resultString(r, i, 0) == db
	}
	r.Close()
	if !found {
		return nil, fmt.Errorf("%w: keyspace %q: the server has no database %q; this server streams %s", ErrKeyspace, db, db, e.servedKeyspaces())
	}
	c := e.cfg
	c.Database, c.Keyspace, c.VSchema = db, db, nil
	return &c, nil
}
