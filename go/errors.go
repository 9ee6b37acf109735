package spool

import (
	"errors"
	"strings"
)

// The refusals and failures a call returns, for errors.Is.  Each is the
// library's (libspool(3), ERRORS; spool_result_text), as the commands
// say them.
var (
	// ErrDuplicate: an enqueue's ID is queued, leased or parked.
	ErrDuplicate = errors.New("duplicate ID")
	// ErrStaleToken: another claim took the job over; stop the work.
	ErrStaleToken = errors.New("stale token")
	// ErrNotLeased: a finish or renew of a job no longer leased.
	ErrNotLeased = errors.New("not leased")
	// ErrNoJob: no job has this ID.
	ErrNoJob = errors.New("no such job")
	// ErrNotParked: a redrive or drop of a job not in dead/.
	ErrNotParked = errors.New("not parked")
	// ErrUnreconciled: a redrive of a job whose side effect may have
	// happened, without Reconciled.
	ErrUnreconciled = errors.New("side effect not reconciled")
	// ErrRefused: any other refusal (exit status 1 of the command).
	ErrRefused = errors.New("refused")
	// ErrPermanent: a bad request or an error no retry mends (100).
	ErrPermanent = errors.New("permanent error")
	// ErrTemporary: a failure that a retry may mend (111).
	ErrTemporary = errors.New("temporary failure")
	// ErrClosed: the Client was closed, or its spool-batch died.
	ErrClosed = errors.New("spool-batch is gone")
)

// An Error is an answer other than done: the command's status and its
// messages, such as "spool-finish: order-7: stale token: the current
// token is 9 and the job is in leased/".
type Error struct {
	Status int      // 1, 100 or 111, as the command exits
	Lines  []string // its messages, one a line
	kind   error
}

func (e *Error) Error() string {
	if len(e.Lines) == 0 {
		return "spool: " + e.kind.Error()
	}
	return strings.Join(e.Lines, "; ")
}

// Unwrap gives the refusal or failure that errors.Is tests.
func (e *Error) Unwrap() error { return e.kind }

// The refusals' words after "COMMAND: ID: ", as libspool's
// spool_result_text writes them.
var refusals = []struct {
	words string
	err   error
}{
	{"duplicate ID", ErrDuplicate},
	{"stale token", ErrStaleToken},
	{"not leased", ErrNotLeased},
	{"no such job", ErrNoJob},
	{"not parked", ErrNotParked},
	{"its side effect may have happened", ErrUnreconciled},
}

// refusal makes the answer a of command cmd an error: by its status, and
// for 1 by the words after the ID of one of ids.
func refusal(cmd string, a *answer, ids []string) error {
	e := &Error{Status: a.Status, Lines: a.Err}
	switch a.Status {
	case 100:
		e.kind = ErrPermanent
	case 1:
		e.kind = ErrRefused
		for _, line := range a.Err {
			for _, id := range ids {
				rest := strings.SplitN(line, ": "+id+": ", 2)
				if id == "" || len(rest) != 2 {
					continue
				}
				for _, r := range refusals {
					if strings.HasPrefix(rest[1], r.words) {
						e.kind = r.err
						return e
					}
				}
			}
		}
	default:
		e.kind = ErrTemporary
	}
	if len(e.Lines) == 0 {
		e.Lines = []string{"spool: " + cmd + ": " + e.kind.Error()}
	}
	return e
}
