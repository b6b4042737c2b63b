package testdb

import "syscall"

// mariadbd gets its own process group so a Ctrl-C aimed at the test or tool
// does not reach it before Close can shut it down cleanly, and it dies with
// its parent so a test binary killed by -timeout leaves no server running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
