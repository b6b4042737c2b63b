//go:build !linux

package main

import "os"

// termWidth is the number of columns of the terminal f, or 0 when it cannot tell.
func termWidth(*os.File) int { return 0 }
