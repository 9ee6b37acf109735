package spool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Handler does one delivery's work.  Its context is done when Work's is,
// or when the job's lease is lost.  Its result finishes the job: nil, ok;
// an error, retry (class transient, the error's text its detail); an
// error made by Permanent, permanent.  A panic is recovered and finishes
// the job as a retry of class crashed; the worker goes on.
type Handler func(ctx context.Context, j *Job) error

// WorkOptions are Work's.  Zero is the default.
type WorkOptions struct {
	Concurrency int           // handlers at once, each its goroutine; 0: 1
	Lease       time.Duration // each claim's lease; 0: the spool's
	Owner       string        // the lease holder; "": spool-batch's HOST:PID
	MaxJobs     int           // return after this many deliveries; 0: no end
	// IdleExit returns once no job has been due for this long; 0: only
	// when ctx is done or MaxJobs are done.
	IdleExit time.Duration
}

type permanent struct {
	class string
	err   error
}

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks a handler's error as one no retry mends: the job parks
// at once, with class (a failure class of spool(7), such as
// "invalid-input") and the error's text as its detail.
func Permanent(class string, err error) error {
	if err == nil {
		err = errors.New(class)
	}
	return &permanent{class, err}
}

// Work runs handlers on due jobs until ctx is done, MaxJobs deliveries
// are done, or nothing has been due for IdleExit.  Each of o.Concurrency
// goroutines has a spool-batch of its own, opened on c's spool: it claims
// a job, runs h while renewing the lease every third of it, and finishes
// the job by h's result.  A Job is valid until its handler returns.
//
// Once ctx is done, nothing more is claimed; running handlers see their
// context done at once, and a job whose handler then returns an error,
// or that was claimed as ctx ended, is released, its attempt not spent.
// Work returns when every handler has returned: nil, or the first reason
// a worker could not go on (a spool-batch that died, a finish that
// failed), which stops the others too.
func (c *Client) Work(ctx context.Context, h Handler, o WorkOptions) error {
	n := o.Concurrency
	if n <= 0 {
		n = 1
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	w := &worker{h: h, o: o, left: o.MaxJobs}
	errs := make(chan error, n+1)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wc, err := Open(c.dir, func(cf *config) { *cf = c.cfg })
		if err != nil {
			errs <- err
			stop()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wc.Close()
			if err := w.loop(ctx, wc); err != nil {
				errs <- err
				stop()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

type worker struct {
	h    Handler
	o    WorkOptions
	mu   sync.Mutex
	left int       // deliveries still to do under MaxJobs
	busy int       // handlers running
	idle time.Time // since when no claim found a job; zero: not idle
}

// take says whether one more delivery may start.
func (w *worker) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.MaxJobs > 0 {
		if w.left == 0 {
			return false
		}
		w.left--
	}
	return true
}

// give says whether a claim took a job: its delivery is not taken if not.
func (w *worker) give(claimed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if claimed {
		w.idle = time.Time{}
	} else if w.o.MaxJobs > 0 {
		w.left++
	}
}

// idled says whether no job has been due for IdleExit, on any goroutine.
func (w *worker) idled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.IdleExit <= 0 || w.busy > 0 {
		return false
	}
	if w.idle.IsZero() {
		w.idle = time.Now()
	}
	return time.Since(w.idle) >= w.o.IdleExit
}

func (w *worker) loop(ctx context.Context, c *Client) error {
	wait := time.Second
	if w.o.IdleExit > 0 && w.o.IdleExit < wait {
		wait = w.o.IdleExit
	}
	for ctx.Err() == nil && w.take() {
		jobs, err := c.Claim(ctx, ClaimOptions{Lease: w.o.Lease,
			Owner: w.o.Owner, Wait: wait})
		w.give(len(jobs) > 0)
		switch {
		case len(jobs) > 0 && ctx.Err() != nil:
			// Claimed as ctx ended: given back, not started.
			return finished(jobs[0].Release(context.Background(), 0))
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrTemporary):
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		case err != nil:
			return err
		case len(jobs) == 0:
			if w.idled() {
				return nil
			}
			continue
		}
		if err := w.run(ctx, jobs[0]); err != nil {
			return err
		}
	}
	return nil
}

// finished is a finish's error, as Work takes it: a lease lost to another
// holder is that holder's job now; any other failure ends the worker.
func finished(err error) error {
	if errors.Is(err, ErrStaleToken) || errors.Is(err, ErrNotLeased) {
		return nil
	}
	return err
}

// finish runs f, again while it fails in a way a retry may mend: its
// token makes a repeat safe.
func finish(f func(context.Context) error) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = f(context.Background()); !errors.Is(err, ErrTemporary) {
			break
		}
		time.Sleep(time.Duration(100<<try) * time.Millisecond)
	}
	return finished(err)
}

// run is one delivery: h under renewals, then its finish; the finish's
// failure, if it failed.
func (w *worker) run(ctx context.Context, j *Job) error {
	w.mu.Lock()
	w.busy++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.busy--
		w.idle = time.Time{}
		w.mu.Unlock()
	}()
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lease := w.o.Lease
	if lease <= 0 {
		lease = time.Until(j.LeaseUntil)
	}
	if lease < 30*time.Millisecond {
		lease = 30 * time.Millisecond
	}
	lost := make(chan struct{})
	stop := make(chan struct{})
	var renewals sync.WaitGroup
	renewals.Add(1)
	go func() {
		defer renewals.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				err := j.Renew(context.Background(), lease)
				if errors.Is(err, ErrStaleToken) ||
					errors.Is(err, ErrNotLeased) ||
					errors.Is(err, ErrClosed) {
					close(lost)
					cancel()
					return
				}
			}
		}
	}()
	// Stopped at the end, or on the way out of a handler's Goexit.
	stopped := false
	halt := func() {
		if !stopped {
			stopped = true
			close(stop)
			renewals.Wait()
		}
	}
	defer halt()
	crashed, crash, err := call(hctx, w.h, j)
	halt()
	select {
	case <-lost:
		return nil // another holds it now; a finish would be refused
	default:
	}
	var p *permanent
	switch {
	case crashed:
		return finish(func(bg context.Context) error {
			return j.Retry(bg, RetryOptions{Class: "crashed",
				Detail: fmt.Sprint("panic: ", crash)})
		})
	case err == nil:
		return finish(j.OK)
	case ctx.Err() != nil:
		return finish(func(bg context.Context) error {
			return j.Release(bg, 0)
		})
	case errors.As(err, &p):
		return finish(func(bg context.Context) error {
			return j.Fail(bg, p.class, p.err.Error())
		})
	default:
		return finish(func(bg context.Context) error {
			return j.Retry(bg, RetryOptions{Class: "transient",
				Detail: err.Error()})
		})
	}
}

// call runs h; crashed if it panicked, even with nil.  A handler's
// runtime.Goexit goes on up and ends its worker's goroutine, the job left
// to its lease.
func call(ctx context.Context, h Handler, j *Job) (crashed bool, crash any,
	err error) {
	done := false
	defer func() {
		if !done {
			crashed, crash = true, recover()
		}
	}()
	err = h(ctx, j)
	done = true
	return false, nil, err
}
