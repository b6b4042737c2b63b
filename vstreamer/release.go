package vstreamer

import "log/slog"

// endSnapshot ends the copy's snapshot transaction. When ROLLBACK fails the connection is in
// an unknown state, possibly still holding the snapshot (and the undo history it pins): it is
// closed, which ends the transaction on the server, and the next chunk opens a new one.
func (s *stream) endSnapshot() {
	c := s.copy
	if c == nil || c.conn == nil {
		return
	}
	if _, err := c.conn.Execute("ROLLBACK"); err != nil {
		s.log.Warn("copy: ending the snapshot failed; dropping the copy connection", slog.String("err", err.Error()))
		_ = c.conn.Close() // the socket is dropped either way; the server ends the session
		c.conn = nil
	}
}

// unlockTables releases the read lock taken while a MySQL snapshot starts. When UNLOCK TABLES
// fails the table may still be locked against writes: the connection is closed, which
// releases every lock it holds, and the next chunk opens a new one.
func (s *stream) unlockTables() {
	c := s.copy
	if c == nil || c.lock == nil {
		return
	}
	if _, err := c.lock.Execute("UNLOCK TABLES"); err != nil {
		s.log.Warn("copy: UNLOCK TABLES failed; dropping the lock connection to release the lock", slog.String("err", err.Error()))
		_ = c.lock.Close() // the socket is dropped either way; the server releases its locks
		c.lock = nil
	}
}
