// Command demodb runs a throwaway MariaDB or MySQL (VSTREAM_TEST_FLAVOR=mysql) with a small, steadily changing
// demo schema, as a source to point vstreamd at during development.
//
// It prints "DSN=<dsn>" on stdout once the database is ready, then commits a
// transaction about every 500 ms until it receives SIGINT or SIGTERM, when it
// shuts the server down and deletes its files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/vstream-cdc/vstream/internal/testdb"
)

const database = "demo"

var schema = []string{
	`CREATE TABLE customers (
		id INT AUTO_INCREMENT PRIMARY KEY,
		name VARCHAR(64) NOT NULL UNIQUE,
		email VARCHAR(128) NULL,
		orders INT NOT NULL DEFAULT 0,
		updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
	)`,
	`CREATE TABLE orders (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		customer VARCHAR(64) NOT NULL,
		amount DECIMAL(10,2) NOT NULL,
		status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new',
		created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
		note JSON NULL
	)`,
	`INSERT INTO customers (name, email) VALUES
		('alice', 'alice@example.com'),
		('bob', 'bob@example.com'),
		('carol', NULL),
		('dave', 'dave@example.org'),
		('eve', 'eve@example.net')`,
}

var customers = []string{"alice", "bob", "carol", "dave", "eve"}

func main() {
	if err := run(); err != nil {
		slog.Error("demodb failed", "err", err)
		os.Exit(1)
	}
}

func run() error {
	dsnFile := flag.String("dsn-file", "", "also write the DSN to this file (written atomically, removed on exit)")
	interval := flag.Duration("interval", 500*time.Millisecond, "pause between write transactions")
	port := flag.Int("port", 0, "database port (0 picks a free one)")
	verbose := flag.Bool("v", false, "log every transaction")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	// Registered before the (slow) server start so that an early Ctrl-C
	// still goes through Close and does not leave a data directory behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := testdb.Start(testdb.Options{Database: database, Port: *port, Logger: logger})
	if err != nil {
		return err
	}
	defer srv.Close()
	if ctx.Err() != nil {
		return nil
	}
	if err := srv.Exec(schema...); err != nil {
		return err
	}

	dsn := srv.DSN(database)
	if *dsnFile != "" {
		if err := writeFileAtomic(*dsnFile, dsn+"\n"); err != nil {
			return err
		}
		// A DSN left behind would point at a server that no longer exists.
		defer func() { _ = os.Remove(*dsnFile) }()
	}
	fmt.Printf("DSN=%s\n", dsn)

	return writeLoad(ctx, srv, *interval, logger)
}

// writeFileAtomic makes the file appear complete or not at all, since a
// script polls for it and reads it as soon as it exists.
func writeFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dsn-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(content); err != nil {
		_ = tmp.Close() // the write error is the one worth reporting
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

func writeLoad(ctx context.Context, srv *testdb.Server, interval time.Duration, logger *slog.Logger) error {
	var conn *client.Conn
	defer func() {
		if conn != nil {
			_ = conn.Quit() // the demo is ending; a failed goodbye changes nothing
		}
	}()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	failures, total := 0, 0
	for {
		select {
		case <-ctx.Done():
			logger.Info("stopping", "transactions", total)
			return nil
		case <-ticker.C:
		}
		if conn == nil {
			c, err := srv.Conn(database)
			if err != nil {
				return err
			}
			conn = c
		}
		if err := transaction(conn, logger); err != nil {
			// Drop the connection: it may be broken, and closing it rolls
			// back whatever the failed transaction left open.
			_ = conn.Close()
			conn = nil
			failures++
			logger.Warn("transaction failed", "err", err, "consecutive", failures)
			if failures >= 10 {
				return fmt.Errorf("giving up after %d failed transactions in a row: %w", failures, err)
			}
			continue
		}
		failures = 0
		total++
		if total%100 == 0 {
			logger.Info("write load running", "transactions", total)
		}
	}
}

var errNoRow = errors.New("no row")

// transaction inserts an order, moves a random earlier order one status
// further, and every few rounds deletes an earlier order, all in one
// transaction that also touches customers, so a stream shows multi-table,
// multi-statement transactions with inserts, updates and deletes.
func transaction(c *client.Conn, logger *slog.Logger) error {
	if err := c.Begin(); err != nil {
		return err
	}
	customer := customers[rand.IntN(len(customers))]
	amount := fmt.Sprintf("%d.%02d", 1+rand.IntN(500), rand.IntN(100))
	var note any // nil binds as SQL NULL
	if rand.IntN(3) > 0 {
		note = fmt.Sprintf(`{"source": %q, "items": %d}`, []string{"web", "app", "phone"}[rand.IntN(3)], 1+rand.IntN(5))
	}
	r, err := c.Execute("INSERT INTO orders (customer, amount, note) VALUES (?, ?, ?)", customer, amount, note)
	if err != nil {
		return err
	}
	newID := int64(r.InsertId)
	if _, err := c.Execute("UPDATE customers SET orders = orders + 1 WHERE name = ?", customer); err != nil {
		return err
	}

	updated := int64(0)
	if id, err := earlierOrder(c, newID, "status <> 'shipped'"); err == nil {
		if _, err = c.Execute("UPDATE orders SET status = IF(status = 'new', 'paid', 'shipped') WHERE id = ?", id); err != nil {
			return err
		}
		updated = id
	} else if !errors.Is(err, errNoRow) {
		return err
	}

	deleted := int64(0)
	if rand.IntN(5) == 0 {
		if id, err := earlierOrder(c, newID, fmt.Sprintf("id <> %d", updated)); err == nil {
			if _, err = c.Execute("DELETE FROM orders WHERE id = ?", id); err != nil {
				return err
			}
			deleted = id
		} else if !errors.Is(err, errNoRow) {
			return err
		}
	}
	if err := c.Commit(); err != nil {
		return err
	}
	logger.Debug("committed", "inserted", newID, "updated", updated, "deleted", deleted)
	return nil
}

// earlierOrder picks a pseudo-random existing order older than before by
// seeking from a random id, which stays cheap as the table grows.
func earlierOrder(c *client.Conn, before int64, cond string) (int64, error) {
	if before <= 1 {
		return 0, errNoRow
	}
	from := 1 + rand.Int64N(before-1)
	for _, q := range []string{
		"SELECT id FROM orders WHERE id >= ? AND id < ? AND " + cond + " ORDER BY id LIMIT 1",
		"SELECT id FROM orders WHERE id < ? AND id < ? AND " + cond + " ORDER BY id DESC LIMIT 1",
	} {
		r, err := c.Execute(q, from, before)
		if err != nil {
			return 0, err
		}
		if r.RowNumber() > 0 {
			return r.GetInt(0, 0)
		}
	}
	return 0, errNoRow
}
