//go:build !linux

package testdb

import "syscall"

// Only Linux has Pdeathsig; elsewhere a killed parent leaves the server
// running until someone stops it, which is acceptable for a dev helper.
func sysProcAttr() *syscall.SysProcAttr { return nil }
