package spool

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child die with this process, as a crash would
// end both: a request in flight is then done or not, never half
// (spool(7)).  Linux sends the signal when the thread that started the
// child ends; Go ends a thread only under runtime.LockOSThread, so a
// goroutine that locks its thread should not call Open.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
