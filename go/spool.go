// Package spool puts jobs in a spool and takes them out, in plain Go.
//
// A spool is a durable job queue that is a directory, with a dead-letter
// queue: spool(7) says what it promises.  This package needs no cgo.  A
// Client runs one spool-batch(1) child process, which opens the spool
// once, and speaks its protocol over two pipes, in JSON.  spool-batch
// must be on PATH, or named with the Command option.
//
// A producer:
//
//	c, err := spool.Open("/var/spool/hooks")
//	...
//	id, err := c.Enqueue(ctx, []byte(body), spool.EnqueueOptions{})
//
// A worker, with 8 goroutines that claim, renew leases while the handler
// runs, and finish each job by the handler's result:
//
//	err = c.Work(ctx, func(ctx context.Context, j *spool.Job) error {
//		body, err := j.Payload()
//		...
//		return send(ctx, j.ID, j.Token, body)
//	}, spool.WorkOptions{Concurrency: 8, Lease: time.Minute})
//
// Every call is durable when it returns without an error, as the
// commands' exit 0 is.  A refusal is an error that errors.Is can test:
// ErrDuplicate, ErrStaleToken, ErrNotParked, ErrUnreconciled, and the
// others below; a failure that a retry may mend is ErrTemporary.  The
// error's text is the command's message, the job's ID in it.
//
// Goroutines may share a Client: it sends one request at a time, and a
// Claim that waits holds it until its wait ends, a second at most; a
// goroutine that waits for jobs is best given a Client of its own, as
// Work gives each of its goroutines.  If the child dies, every call fails
// with ErrClosed; Open makes a new Client.
package spool

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Protocol is the version of spool-batch's protocol this package speaks.
const Protocol = 1

// A Client is one spool-batch child process on one spool.
type Client struct {
	dir string
	cfg config

	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	dead error // once set, every call returns it
}

type config struct {
	command string
}

// An Option changes how Open starts spool-batch.
type Option func(*config)

// Command names the spool-batch program to run; the default is
// "spool-batch", found on PATH.
func Command(path string) Option {
	return func(c *config) { c.command = path }
}

// Open starts spool-batch on the spool in dir, made by spool-init(1), and
// checks that it speaks Protocol.
func Open(dir string, opts ...Option) (*Client, error) {
	c := &Client{dir: dir, cfg: config{command: "spool-batch"}}
	for _, o := range opts {
		o(&c.cfg)
	}
	cmd := exec.Command(c.cfg.command, "-d", dir, "--json")
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReader(out)
	var hello struct {
		Protocol string `json:"protocol"`
		Version  int    `json:"version"`
	}
	line, err := c.out.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &hello)
	}
	if err == nil && (hello.Protocol != "spool-batch" ||
		hello.Version != Protocol) {
		err = fmt.Errorf("%s says %q, not spool-batch %d",
			c.cfg.command, line, Protocol)
	}
	if err != nil {
		// It said why on stderr, and exited; or it is not spool-batch.
		_ = c.in.Close()
		if werr := c.cmd.Wait(); werr != nil {
			err = exitError(werr)
		}
		return nil, fmt.Errorf("spool: %s: %w", dir, err)
	}
	return c, nil
}

// exitError says how spool-batch ended: its one line on stderr came
// before, on this process's stderr.
func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("spool-batch exited %d", ee.ExitCode())
	}
	return err
}

func (c *Client) kill() {
	_ = c.in.Close()
	_ = c.cmd.Process.Kill()
}

// Close ends the session: spool-batch answers what it has read and exits.
// Calls after it fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return nil // ended before, and waited for
	}
	c.dead = fmt.Errorf("spool: %s: %w", c.dir, ErrClosed)
	_ = c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("spool: %s: %w", c.dir, exitError(err))
	}
	return nil
}

// answer is one of spool-batch's answers (spool-batch(1), "JSON").
type answer struct {
	Status int               `json:"status"`
	Out    []json.RawMessage `json:"out"`
	Err    []string          `json:"err"`
}

// The limits of spool-batch(1): a request's line, its newline not
// counted, and a payload.
const (
	lineMax  = 65536
	bytesMax = 1 << 30
)

// invalid is a request spool-batch would refuse before it knew whether a
// payload follows: it is not sent, so the session stays in step.
func invalid(payload []byte, words []string, line []byte) error {
	why := ""
	switch {
	case len(payload) > bytesMax:
		why = "a payload over 1G"
	case len(line) > lineMax:
		why = "a request over 65536 bytes"
	}
	for _, w := range words {
		if strings.IndexByte(w, 0) >= 0 {
			why = "a NUL in " + strconv.Quote(w)
		}
	}
	if why == "" {
		return nil
	}
	return &Error{Status: 100, kind: ErrPermanent,
		Lines: []string{"spool: " + words[0] + ": " + why}}
}

// call sends one request, words and then a payload if not nil, and reads
// its answer.  A status other than 0 is the answer's, for the caller.
// The Client is held until the answer: a Claim's wait holds it too.
func (c *Client) call(ctx context.Context, payload []byte,
	words ...string) (*answer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return nil, c.dead
	}
	if payload != nil {
		words = append(words, "--bytes", strconv.Itoa(len(payload)))
	}
	req, err := json.Marshal(words)
	if err != nil {
		return nil, err
	}
	if err := invalid(payload, words, req); err != nil {
		return nil, err
	}
	req = append(req, '\n')
	if payload != nil {
		req = append(append(req, payload...), '\n')
	}
	var a answer
	if _, err = c.in.Write(req); err == nil {
		var line []byte
		if line, err = c.out.ReadBytes('\n'); err == nil {
			err = json.Unmarshal(line, &a)
		}
	}
	if err != nil {
		// The session is lost: its last request may have taken
		// effect (spool-batch(1), "A closed pipe").
		c.kill()
		werr := c.cmd.Wait()
		c.dead = fmt.Errorf("spool: spool-batch on %s ended (%v) during "+
			"%s: its effect may be durable: Show says: %w", c.dir,
			exitError(werr), words[0], ErrClosed)
		return nil, c.dead
	}
	return &a, nil
}

// do is call, with an answer other than 0 made an error.
func (c *Client) do(ctx context.Context, payload []byte, ids []string,
	words ...string) (*answer, error) {
	a, err := c.call(ctx, payload, words...)
	if err != nil {
		return nil, err
	}
	if a.Status != 0 {
		return a, refusal(words[0], a, ids)
	}
	return a, nil
}

// ms is a duration as spool-batch reads one: whole milliseconds, at
// least 1.
func ms(d time.Duration) string {
	n := d.Milliseconds()
	if n < 1 {
		n = 1
	}
	return strconv.FormatInt(n, 10) + "ms"
}

// EnqueueOptions are spool-enqueue(1)'s options.  Zero is the spool's
// default.
type EnqueueOptions struct {
	ID          string        // the job's ID; "": a new one
	MaxAttempts int           // deliveries before it parks
	Deadline    time.Duration // time allowed from now
	Delay       time.Duration // eligible after this long
	Key         string        // the job's key, for the spool's limits
	Trace       string        // a trace ID kept with the job
}

func (o EnqueueOptions) words() []string {
	w := []string{"enqueue"}
	if o.ID != "" {
		w = append(w, "--id", o.ID)
	}
	if o.MaxAttempts != 0 {
		w = append(w, "--max-attempts", strconv.Itoa(o.MaxAttempts))
	}
	if o.Deadline != 0 {
		w = append(w, "--deadline", ms(o.Deadline))
	}
	if o.Delay != 0 {
		w = append(w, "--delay", ms(o.Delay))
	}
	if o.Key != "" {
		w = append(w, "--key", o.Key)
	}
	if o.Trace != "" {
		w = append(w, "--trace", o.Trace)
	}
	return w
}

// Enqueue publishes a job with payload and returns its ID.  An ID that is
// queued, leased or parked is refused with ErrDuplicate; one whose job is
// done starts its next cycle.
func (c *Client) Enqueue(ctx context.Context, payload []byte,
	o EnqueueOptions) (string, error) {
	if payload == nil {
		payload = []byte{}
	}
	a, err := c.do(ctx, payload, []string{o.ID}, o.words()...)
	if err != nil {
		return "", err
	}
	var id string
	if len(a.Out) != 1 || json.Unmarshal(a.Out[0], &id) != nil {
		return "", fmt.Errorf("spool: enqueue: an answer without an ID")
	}
	return id, nil
}

// EnqueueFrom is Enqueue of what r holds, read to its end first.
func (c *Client) EnqueueFrom(ctx context.Context, r io.Reader,
	o EnqueueOptions) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return c.Enqueue(ctx, b, o)
}

// ClaimOptions are spool-claim(1)'s options, and a wait.
type ClaimOptions struct {
	N     int           // jobs to claim, 1 to 256; 0: 1
	Lease time.Duration // each lease's length; 0: the spool's
	Owner string        // the lease holder; "": spool-batch's HOST:PID
	// Wait is the longest wait for a job when none is due: as
	// spool-run(1) waits, until one is due or this host's spool
	// changes.  0: no wait.  The context ends it sooner.
	Wait time.Duration
}

// A Job is a delivery: a claimed job, under its lease.
type Job struct {
	ID         string
	Token      uint64 // the fencing token: pass it on with the work
	Attempt    int    // this delivery's number in the cycle, from 1
	Cycle      int    // the job's cycle, from 1
	Path       string // its payload's file: read it, never change it
	LeaseUntil time.Time
	Trace      string
	c          *Client
}

// waitSlice is the longest wait one request makes, so that a context
// ends a claim's wait this soon after it is done.
const waitSlice = time.Second

// Claim leases up to o.N due jobs; none, and no error, when none is due
// within o.Wait.  The context ends the wait: Claim returns its error.
func (c *Client) Claim(ctx context.Context, o ClaimOptions) ([]*Job, error) {
	n := o.N
	if n == 0 {
		n = 1
	}
	words := []string{"claim", "-n", strconv.Itoa(n)}
	if o.Lease != 0 {
		words = append(words, "--lease", ms(o.Lease))
	}
	if o.Owner != "" {
		words = append(words, "--owner", o.Owner)
	}
	until := time.Now().Add(o.Wait)
	for {
		w := words
		left := time.Until(until)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < left {
			left = time.Until(dl)
		}
		if left > waitSlice {
			left = waitSlice
		}
		if o.Wait > 0 && left >= time.Millisecond {
			w = append(w, "--wait", ms(left))
		}
		a, err := c.call(ctx, nil, w...)
		if err != nil {
			return nil, err
		}
		switch {
		case a.Status == 0:
			return c.leases(a)
		case a.Status != 1:
			return nil, refusal("claim", a, nil)
		case time.Until(until) <= 0:
			return nil, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
	}
}

func (c *Client) leases(a *answer) ([]*Job, error) {
	jobs := make([]*Job, 0, len(a.Out))
	for _, raw := range a.Out {
		var l struct {
			ID         string `json:"id"`
			Token      uint64 `json:"token"`
			Attempt    int    `json:"attempt"`
			Cycle      int    `json:"cycle"`
			LeaseUntil int64  `json:"lease_until"`
			Trace      string `json:"trace"`
			Path       string `json:"path"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("spool: claim: %w", err)
		}
		jobs = append(jobs, &Job{ID: l.ID, Token: l.Token,
			Attempt: l.Attempt, Cycle: l.Cycle, Path: l.Path,
			LeaseUntil: time.UnixMilli(l.LeaseUntil), Trace: l.Trace,
			c: c})
	}
	return jobs, nil
}

// Payload is the job's payload, read from Path.
func (j *Job) Payload() ([]byte, error) {
	return os.ReadFile(j.Path)
}

func (j *Job) finish(ctx context.Context, outcome string,
	opts ...string) error {
	words := append([]string{"finish"}, opts...)
	words = append(words, j.ID, strconv.FormatUint(j.Token, 10), outcome)
	_, err := j.c.do(ctx, nil, []string{j.ID}, words...)
	return err
}

// OK ends the delivery: the job is done.
func (j *Job) OK(ctx context.Context) error {
	return j.finish(ctx, "ok")
}

// AtOnce, as a Delay, makes a retried or released job eligible at once.
const AtOnce = time.Duration(-1)

// RetryOptions say why a delivery failed and when to try again.
type RetryOptions struct {
	Class  string        // a failure class of spool(7); "": none
	Detail string        // a short detail, kept with the job
	Delay  time.Duration // 0: the spool's backoff; AtOnce: at once
}

func delay(d time.Duration) []string {
	switch {
	case d < 0:
		return []string{"--delay", "0"}
	case d > 0:
		return []string{"--delay", ms(d)}
	}
	return nil
}

// Retry ends the delivery as failed: the job is tried again after a
// delay, unless its attempts or its deadline are spent, when it parks.
func (j *Job) Retry(ctx context.Context, o RetryOptions) error {
	var opts []string
	if o.Class != "" {
		opts = append(opts, "--class", o.Class)
	}
	if o.Detail != "" {
		opts = append(opts, "--detail", o.Detail)
	}
	return j.finish(ctx, "retry", append(opts, delay(o.Delay)...)...)
}

// Fail ends the delivery as a permanent failure: the job parks in dead/
// at once, for a person.
func (j *Job) Fail(ctx context.Context, class, detail string) error {
	var opts []string
	if class != "" {
		opts = append(opts, "--class", class)
	}
	if detail != "" {
		opts = append(opts, "--detail", detail)
	}
	return j.finish(ctx, "permanent", opts...)
}

// Release gives the job back unused, its attempt not spent, eligible
// after d: 0 or AtOnce is at once, as a release has no backoff.
func (j *Job) Release(ctx context.Context, d time.Duration) error {
	if d == 0 {
		d = AtOnce
	}
	return j.finish(ctx, "release", delay(d)...)
}

// Renew extends the lease to lease from now (0: the spool's lease).
func (j *Job) Renew(ctx context.Context, lease time.Duration) error {
	words := []string{"renew"}
	if lease != 0 {
		words = append(words, "--lease", ms(lease))
	}
	words = append(words, j.ID, strconv.FormatUint(j.Token, 10))
	_, err := j.c.do(ctx, nil, []string{j.ID}, words...)
	return err
}

// OperatorOptions say who acts and why, as the operator's commands take
// them (--by, --note); Reconciled and Edited are spool-redrive(1)'s.
type OperatorOptions struct {
	By, Note   string
	Reconciled bool // the side effect was checked: redrive it anyway
	Edited     bool // send the payload as it is now, changed by hand
}

func (o OperatorOptions) words(cmd string) []string {
	w := []string{cmd}
	if o.By != "" {
		w = append(w, "--by", o.By)
	}
	if o.Note != "" {
		w = append(w, "--note", o.Note)
	}
	if o.Reconciled {
		w = append(w, "--reconciled")
	}
	if o.Edited {
		w = append(w, "--edited")
	}
	return w
}

func (c *Client) act(ctx context.Context, cmd string, o OperatorOptions,
	ids []string) error {
	words := append(o.words(cmd), ids...)
	_, err := c.do(ctx, nil, ids, words...)
	return err
}

// Redrive puts parked jobs back in new/ (spool-redrive(1)).
func (c *Client) Redrive(ctx context.Context, o OperatorOptions,
	ids ...string) error {
	return c.act(ctx, "redrive", o, ids)
}

// Drop ends parked jobs without running them (spool-drop(1)).
func (c *Client) Drop(ctx context.Context, o OperatorOptions,
	ids ...string) error {
	return c.act(ctx, "drop", o, ids)
}

// Cancel stops queued or leased jobs: they park (spool-cancel(1)).
func (c *Client) Cancel(ctx context.Context, o OperatorOptions,
	ids ...string) error {
	return c.act(ctx, "cancel", o, ids)
}

// Pause stops claims; producers go on (spool-pause(1)).
func (c *Client) Pause(ctx context.Context, o OperatorOptions) error {
	return c.act(ctx, "pause", o, nil)
}

// Resume lets claims go on (spool-resume(1)).
func (c *Client) Resume(ctx context.Context, o OperatorOptions) error {
	return c.act(ctx, "resume", o, nil)
}
