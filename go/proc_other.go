//go:build !linux

package spool

import "os/exec"

// dieWithParent: elsewhere, a child outlives a killed parent until its
// next answer cannot be written (spool-batch(1), "A closed pipe").
func dieWithParent(cmd *exec.Cmd) {}
